// An input-gradient all-reduce that a backward leaves in flight, and the autograd node that
// waits for it. The wait sits on the input's path, so nothing reads the gradient before it is
// summed, and it ranks below other ready work, so the engine runs that first (another
// micro-batch's backward, a weight GEMM, the next column part's consumer).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>  // NodePtr is complete for wait_node_
#include <torch/custom_class.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <memory>
#include <type_traits>

namespace domino::overlap {

class DeferredReduction : public torch::CustomClassHolder {
 public:
  // A slot for the reduction of `input`'s gradient, and `input` routed through the node that
  // waits for it in backward; the slot ranks its wait below the current DeferredWaitScope.
  // own_copy: the sum is a view into a larger message, so the wait hands on a copy of it.
  static c10::intrusive_ptr<DeferredReduction> on_path_of(const at::Tensor& input,
                                                          at::Tensor& routed,
                                                          bool own_copy = false);

  // The backward that computed the gradient started its reduction.
  void issued(c10::intrusive_ptr<c10d::Work> work);
  // Called by the wait node.
  void wait();
  bool own_copy() const { return own_copy_; }

 private:
  // Autograd nodes live in shared_ptr up to torch 2.11 and in intrusive_ptr after; the slot
  // keeps a weak reference of whichever kind.
  using NodePtr = std::decay_t<decltype(std::declval<const at::Tensor&>().grad_fn())>;
  template <class Strong>
  struct WeakOf;
  template <class T>
  struct WeakOf<std::shared_ptr<T>> {
    using type = std::weak_ptr<T>;
  };
  template <class T>
  struct WeakOf<c10::intrusive_ptr<T>> {
    using type = c10::weak_intrusive_ptr<T>;
  };

  c10::intrusive_ptr<c10d::Work> work_;
  uint64_t floor_ = 0;  // first sequence number of the forward pass that made the wait
  bool own_copy_ = false;
  typename WeakOf<NodePtr>::type wait_node_{NodePtr()};
};

// Brackets a forward pass that defers input-gradient waits: the waits it creates rank below
// every autograd node created inside it. Nests (the outermost pass counts).
class DeferredWaitScope {
 public:
  DeferredWaitScope();
  DeferredWaitScope(const DeferredWaitScope&) = delete;
  DeferredWaitScope& operator=(const DeferredWaitScope&) = delete;
  ~DeferredWaitScope();

 private:
  uint64_t previous_;
};

}  // namespace domino::overlap
