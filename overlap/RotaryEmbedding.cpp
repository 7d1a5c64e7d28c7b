#include "RotaryEmbedding.h"

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>

namespace domino::overlap {

at::Tensor RotaryEmbedding::apply(const at::Tensor& x) {
  const int64_t seq = x.size(0);
  at::Tensor cos, sin;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A cache built under inference mode cannot be saved for a later backward: rebuild it.
    if (!cos_.defined() || cos_.size(0) < seq || cos_.device() != x.device() ||
        cos_.scalar_type() != x.scalar_type() ||
        cos_.is_inference() != c10::InferenceMode::is_enabled()) {
      auto fp32 = at::TensorOptions().dtype(at::kFloat).device(x.device());
      auto inv_freq =
          at::pow(base_, at::arange(0, head_dim_, 2, fp32) / static_cast<double>(head_dim_))
              .reciprocal();
      auto angles = at::outer(at::arange(seq, fp32), inv_freq);
      auto both = at::cat({angles, angles}, -1).view({seq, 1, 1, head_dim_});
      cos_ = both.cos().to(x.scalar_type());
      sin_ = both.sin().to(x.scalar_type());
    }
    cos = cos_.narrow(0, 0, seq);
    sin = sin_.narrow(0, 0, seq);
  }
  const int64_t half = head_dim_ / 2;
  auto rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

}  // namespace domino::overlap
