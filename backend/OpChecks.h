// What every c10d entry point checks of its arguments before it issues work, shared by the files
// that implement the surface. Each failure names the op, the group and the rank (through where).
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "OpSite.h"
#include "TensorBuffer.h"
#include "domino/plugin.h"
#include "plugins/common/Dtype.h"

namespace domino {

// Whether the caller said async_op=False (older torch does not say, so assume async).
template <class Options>
bool is_blocking(const Options& opts) {
#if !defined(TORCH_VERSION_MAJOR)
#error "torch/version.h must define TORCH_VERSION_MAJOR"
#elif TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8)
  return !opts.asyncOp;
#else
  (void)opts;
  return false;
#endif
}

inline void require_one(const char* op, const std::vector<at::Tensor>& tensors,
                        const OpSite& where) {
  TORCH_CHECK(tensors.size() == 1, where, ": expected exactly one tensor, got ", tensors.size(),
              " (", op, " takes one tensor per process)");
}

inline void require_same(const at::Tensor& reference, const std::vector<at::Tensor>& tensors,
                         int64_t numel, const OpSite& where, const char* what) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    TORCH_CHECK(tensors[i].scalar_type() == reference.scalar_type(), where, ": ", what, "[", i,
                "] has dtype ", tensors[i].scalar_type(), " but the input has ",
                reference.scalar_type());
    TORCH_CHECK(numel < 0 || tensors[i].numel() == numel, where, ": ", what, "[", i, "] has ",
                tensors[i].numel(), " elements, expected ", numel);
  }
}

// A c10d reduction as the transports run it: PREMUL_SUM becomes SUM over inputs multiplied by
// its factor first (a scalar, or a one-element tensor), as NCCL does inside its kernel.
struct Reduction {
  domino_redop_t op = DOMINO_SUM;
  bool premultiply = false;
  double factor = 1.0;
  at::Tensor tensor_factor;  // defined when the factor is a tensor

  // On the lane: input times the factor in input's dtype, as a new tensor (the caller's stays
  // as it was). Both factors are cast to the dtype first, as NCCL does.
  at::Tensor premultiplied(const at::Tensor& input) const {
    hold_for_session(input);
    if (!tensor_factor.defined()) {
      return input.mul(at::scalar_tensor(factor, input.options()));
    }
    hold_for_session(tensor_factor);
    return input.mul(tensor_factor.to(input.device(), input.scalar_type()).reshape({}));
  }
  std::vector<at::Tensor> premultiplied(const std::vector<at::Tensor>& inputs) const {
    std::vector<at::Tensor> out;
    for (const at::Tensor& t : inputs) out.push_back(premultiplied(t));
    return out;
  }
};

// On the lane, for ops whose output is their input (all-reduce, reduce): runs op(buffer) over a
// premultiplied copy of tensors staged as one buffer, then, where write_back, copies the result
// into them.
template <class Op>
void reduce_premultiplied(const Reduction& reduction, const std::vector<at::Tensor>& tensors,
                          bool write_back, Op&& op) {
  std::vector<at::Tensor> scaled = reduction.premultiplied(tensors);
  auto run = [&](auto&& staged) {
    domino_buffer_t buffer = staged.buffer();
    op(buffer);
    if (write_back) staged.publish();
  };
  // One tensor is staged as itself, without the flat copy a list needs.
  if (scaled.size() == 1) {
    run(StagedTensor(scaled[0]));
  } else {
    run(StagedList(scaled, /*copy_in=*/true));
  }
  if (!write_back) return;
  for (size_t i = 0; i < tensors.size(); ++i) {
    hold_for_session(tensors[i]);
    tensors[i].copy_(scaled[i]);
  }
}

inline Reduction checked_reduction(const c10d::ReduceOp& op, const at::Tensor& t,
                                   const OpSite& where) {
  Reduction r;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      r.op = DOMINO_SUM;
      break;
    case c10d::ReduceOp::AVG:
      r.op = DOMINO_AVG;
      break;
    case c10d::ReduceOp::PRODUCT:
      r.op = DOMINO_PRODUCT;
      break;
    case c10d::ReduceOp::MIN:
      r.op = DOMINO_MIN;
      break;
    case c10d::ReduceOp::MAX:
      r.op = DOMINO_MAX;
      break;
    case c10d::ReduceOp::BAND:
      r.op = DOMINO_BAND;
      break;
    case c10d::ReduceOp::BOR:
      r.op = DOMINO_BOR;
      break;
    case c10d::ReduceOp::BXOR:
      r.op = DOMINO_BXOR;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      const auto* factor = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(factor != nullptr, where,
                  ": PREMUL_SUM without a factor; make it with "
                  "torch.distributed._make_nccl_premul_sum(factor)");
      TORCH_CHECK(at::isFloatingType(t.scalar_type()), where, ": PREMUL_SUM on a ", t.scalar_type(),
                  " tensor; it needs a floating dtype (float32, float64, float16, bfloat16)");
      r.premultiply = true;
      if (factor->tensor_factor.defined()) {
        TORCH_CHECK(factor->tensor_factor.numel() == 1, where,
                    ": a PREMUL_SUM tensor factor must have one element, this one has ",
                    factor->tensor_factor.numel());
        r.tensor_factor = factor->tensor_factor;
      } else {
        r.factor = factor->double_factor;
      }
      break;
    }
    default:
      TORCH_CHECK(false, where, ": reduce op ", static_cast<int>(op.op_),
                  " is not supported by domino; use SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR "
                  "or PREMUL_SUM");
  }
  const std::string unsupported =
      reduction_unsupported_reason(to_domino_dtype(t.scalar_type(), where), r.op);
  TORCH_CHECK(unsupported.empty(), where, ": ", unsupported);
  return r;
}

// The CUDA device all of an op's tensors are on; nullopt when they are all in host memory.
inline std::optional<c10::Device> device_of(
    const OpSite& where, std::initializer_list<const std::vector<at::Tensor>*> lists) {
  const at::Tensor* first = nullptr;
  for (const auto* list : lists) {
    for (const at::Tensor& t : *list) {
      if (!t.defined()) continue;
      TORCH_CHECK(t.is_cpu() || t.is_cuda(), where, ": tensors on ", t.device(),
                  " are not supported; use CPU or CUDA tensors");
      if (first == nullptr) {
        first = &t;
        continue;
      }
      TORCH_CHECK(t.device() == first->device(), where, ": one tensor is on ", t.device(),
                  " and another on ", first->device(),
                  "; all tensors of one collective must be on the same device");
    }
  }
  if (first == nullptr || first->is_cpu()) return std::nullopt;
  return first->device();
}

// NCCL has no bitwise reductions except on bools (min and max): those stage through host memory.
inline bool needs_host(domino_redop_t op, const at::Tensor& t) {
  const bool bitwise = op == DOMINO_BAND || op == DOMINO_BOR || op == DOMINO_BXOR;
  return bitwise && (t.scalar_type() != at::kBool || op == DOMINO_BXOR);
}

}  // namespace domino
