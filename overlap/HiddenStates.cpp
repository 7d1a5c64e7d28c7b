#include "HiddenStates.h"

#include <stdexcept>
#include <string>

namespace domino::overlap {

void check_hidden_shape(const at::Tensor& hidden, int64_t hidden_size,
                        const TensorParallelGroup& group, const char* layer) {
  if (hidden.dim() != 3 || hidden.size(2) != hidden_size) {
    throw std::invalid_argument(
        std::string(layer) + ": expects hidden states [s, b, " + std::to_string(hidden_size) +
        "] (sequence first, as in Megatron), got " + std::to_string(hidden.dim()) +
        " dims with last size " + std::to_string(hidden.dim() ? hidden.size(-1) : 0) + " on " +
        group.describe());
  }
}

void check_hidden(const at::Tensor& hidden, const TransformerConfig& config,
                  const TensorParallelGroup& group, const char* layer) {
  check_hidden_shape(hidden, config.hidden_size, group, layer);
  if (config.batch_slices() > hidden.size(1)) {
    throw std::invalid_argument(
        std::string(layer) + ": micro_batches=" + std::to_string(config.batch_slices()) +
        " exceeds the batch of " + std::to_string(hidden.size(1)) + " sequences on " +
        group.describe() + "; use at most " + std::to_string(hidden.size(1)) + " micro-batches");
  }
}

}  // namespace domino::overlap
