#include "MicroBatch.h"

#include <ATen/Functions.h>

#include <stdexcept>
#include <string>

namespace domino::overlap {

MicroBatch MicroBatch::ready(at::Tensor value, int64_t batch_offset) {
  std::vector<at::Tensor> parts;
  parts.push_back(std::move(value));
  return ready(std::move(parts), batch_offset);
}

MicroBatch MicroBatch::ready(std::vector<at::Tensor> parts, int64_t batch_offset) {
  MicroBatch micro_batch;
  micro_batch.settled_.assign(parts.size(), true);
  micro_batch.parts_ = std::move(parts);
  micro_batch.batch_offset_ = batch_offset;
  return micro_batch;
}

void MicroBatch::add(PendingSum delta, DropMask dropout) {
  TORCH_CHECK(!delta.empty(), "MicroBatch: add() takes a sum with at least one chunk");
  if (!delta_.empty()) settle();
  // A whole residual stays whole: cut only if a consumer takes it part by part (part()).
  if (parts_.size() > 1 && delta.chunks() != parts()) {
    if (delta.chunks() > 1) {
      throw std::logic_error("MicroBatch: a sum in " + std::to_string(delta.chunks()) +
                             " chunks added to a residual in " + std::to_string(parts()) +
                             " parts");
    }
    parts_ = {resolve()};
  }
  delta_ = std::move(delta);
  dropout_ = std::move(dropout);
  settled_.assign(parts_.size(), false);
}

int64_t MicroBatch::parts() const {
  return whole_awaits_chunks() ? delta_.chunks() : static_cast<int64_t>(parts_.size());
}

bool MicroBatch::whole_awaits_chunks() const {
  return parts_.size() == 1 && delta_.chunks() > 1;
}

void MicroBatch::cut_whole(int64_t count, bool settled) {
  const auto whole = parts_[0];
  const int64_t width = whole.size(-1) / count;
  parts_.clear();
  for (int64_t k = 0; k < count; ++k) parts_.push_back(whole.narrow(-1, k * width, width));
  settled_.assign(parts_.size(), settled);
}

void MicroBatch::cut_columns(int64_t count) {
  if (parts() == count) return;
  parts_ = {resolve()};
  cut_whole(count, true);
}

at::Tensor MicroBatch::part(int64_t k) {
  TORCH_CHECK_INDEX(k >= 0 && k < parts(), "MicroBatch: part ", k, " of ", parts());
  // The residual is cut like the sum, its parts still waiting for their chunks.
  if (whole_awaits_chunks()) cut_whole(delta_.chunks(), false);
  const auto index = static_cast<size_t>(k);
  if (!settled_[index]) {
    const int64_t width = parts_[index].size(-1);
    const auto update = delta_.chunk(k);
    const auto mask = parts() == 1 ? dropout_ : dropout_.columns(k * width, width);
    parts_[index] = parts_[index] + mask.apply(update);
    settled_[index] = true;
  }
  bool all_settled = true;
  for (bool settled : settled_) all_settled = all_settled && settled;
  if (all_settled && !delta_.empty()) {
    delta_ = PendingSum();
    dropout_ = DropMask();
  }
  return parts_[index];
}

void MicroBatch::settle() {
  if (whole_awaits_chunks()) {
    resolve();
    return;
  }
  for (int64_t k = 0; k < parts(); ++k) part(k);
}

at::Tensor MicroBatch::resolve() {
  if (whole_awaits_chunks()) {
    // Whole residual, sum in chunks: one add of the whole sum, no cut and join.
    parts_[0] = parts_[0] + dropout_.apply(delta_.resolve());
    settled_.assign(1, true);
    delta_ = PendingSum();
    dropout_ = DropMask();
    return parts_[0];
  }
  settle();
  if (parts_.size() > 1) {
    // Joined once: the next resolve() returns the same tensor instead of copying again.
    parts_ = {at::cat(parts_, -1)};
    settled_.assign(1, true);
  }
  return parts_[0];
}

at::Tensor MicroBatch::like_whole() const {
  if (parts_.size() == 1) return parts_[0];
  auto shape = parts_[0].sizes().vec();
  shape.back() *= parts();
  return at::empty(shape, parts_[0].options());
}

std::vector<MicroBatch> split_batch(const at::Tensor& hidden, int64_t count) {
  std::vector<MicroBatch> micro_batches;
  int64_t offset = 0;
  for (auto& part : at::tensor_split(hidden, count, 1)) {
    const int64_t rows = part.size(1);
    micro_batches.push_back(MicroBatch::ready(std::move(part), offset));
    offset += rows;
  }
  return micro_batches;
}

at::Tensor join_batch(std::vector<MicroBatch>& micro_batches) {
  std::vector<at::Tensor> parts;
  for (auto& micro_batch : micro_batches) parts.push_back(micro_batch.resolve());
  return parts.size() == 1 ? parts[0] : at::cat(parts, 1);
}

}  // namespace domino::overlap
