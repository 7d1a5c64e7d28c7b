#include "DeferredReduction.h"

#include <ATen/SequenceNumber.h>
#include <torch/csrc/autograd/custom_function.h>

#include "TensorParallelGroup.h"

namespace domino::overlap {

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

thread_local uint64_t pass_floor = 0;

// Below every node of the forward pass (the engine runs the highest sequence number first), and
// the earliest reduction first.
uint64_t deferred_wait_priority(uint64_t floor) {
  thread_local uint64_t issued = 0;
  return floor == 0 ? 0 : floor - 1 - (issued++ % floor);
}

struct WaitForInputGradient : public torch::autograd::Function<WaitForInputGradient> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input,
                            const c10::intrusive_ptr<DeferredReduction>& slot) {
    ctx->saved_data["slot"] = c10::IValue::make_capsule(slot);
    return input.view_as(input);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto slot =
        c10::static_intrusive_pointer_cast<DeferredReduction>(ctx->saved_data["slot"].toCapsule());
    slot->wait();
    return {slot->own_copy() ? grads[0].clone() : grads[0], at::Tensor()};
  }
};
}  // namespace

c10::intrusive_ptr<DeferredReduction> DeferredReduction::on_path_of(const at::Tensor& input,
                                                                    at::Tensor& routed,
                                                                    bool own_copy) {
  auto slot = c10::make_intrusive<DeferredReduction>();
  slot->floor_ = pass_floor;
  slot->own_copy_ = own_copy;
  routed = WaitForInputGradient::apply(input, slot);
  slot->wait_node_ = decltype(slot->wait_node_)(routed.grad_fn());
  return slot;
}

void DeferredReduction::issued(c10::intrusive_ptr<c10d::Work> work) {
  work_ = std::move(work);
  if (auto node = wait_node_.lock()) node->set_sequence_nr(deferred_wait_priority(floor_));
}

void DeferredReduction::wait() {
  wait_for(work_);
  work_.reset();
}

DeferredWaitScope::DeferredWaitScope() : previous_(pass_floor) {
  if (previous_ == 0) pass_floor = at::sequence_number::peek();
}

DeferredWaitScope::~DeferredWaitScope() {
  pass_floor = previous_;
}

}  // namespace domino::overlap
