#include "RotaryEmbedding.h"

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

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

at::Tensor RotaryEmbedding::apply_angles(const at::Tensor& x, const at::Tensor& angles) {
  const int64_t seq = x.size(0);
  const int64_t rotated_dims = angles.size(-1);
  TORCH_CHECK(angles.dim() == 4 && angles.size(0) >= seq && rotated_dims <= x.size(-1) &&
                  rotated_dims % 2 == 0,
              "rotary angles of shape ", angles.sizes(), " do not fit ", seq,
              " positions of heads of ", x.size(-1),
              " dimensions; expected [s, 1, 1, r] with r "
              "even and at most the head dimension");
  const auto both = angles.narrow(0, 0, seq).to(x.device(), at::kFloat);
  const auto cos = both.cos().to(x.scalar_type());
  const auto sin = both.sin().to(x.scalar_type());
  const auto part = x.narrow(-1, 0, rotated_dims);
  const int64_t half = rotated_dims / 2;
  auto turned = at::cat({-part.narrow(-1, half, half), part.narrow(-1, 0, half)}, -1);
  auto result = part * cos + turned * sin;
  if (rotated_dims == x.size(-1)) return result;
  return at::cat({result, x.narrow(-1, rotated_dims, x.size(-1) - rotated_dims)}, -1);
}

}  // namespace domino::overlap
