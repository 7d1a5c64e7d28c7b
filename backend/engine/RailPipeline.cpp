#include "RailPipeline.h"

#include <algorithm>
#include <vector>

#include "plugins/common/Dtype.h"
#include "plugins/common/TransportError.h"

namespace domino {

RailPipeline::RailPipeline(Communicator& local, Communicator& rail, int local_size,
                           const ThreadPlacement& rail_thread)
    : local_(local),
      rail_(rail),
      local_size_(local_size),
      rail_thread_(rail_thread.nice, rail_thread.cpus) {}

std::future<void> RailPipeline::post_rail(const domino_buffer_t& slice, domino_redop_t op) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> result = done->get_future();
  rail_thread_.submit([this, slice, op, done, failed = failed_] {
    try {
      if (failed->load()) {
        throw TransportError(DOMINO_ERR_PEER, "skipped: an earlier step of this all-reduce failed");
      }
      domino_buffer_t inout = slice;
      rail_.allreduce(inout, inout, op);
      done->set_value();
    } catch (...) {
      failed->store(true);
      done->set_exception(std::current_exception());
    }
  });
  return result;
}

void RailPipeline::allreduce(const domino_buffer_t& data, void* slices, size_t chunks,
                             domino_redop_t op) {
  failed_->store(false);
  const size_t element = dtype_size(data.dtype);
  const size_t local = static_cast<size_t>(local_size_);
  // Whole slices per chunk, so that every step divides evenly; the last chunk takes the rest.
  const size_t slices_total = data.count / local;
  const size_t per_slice = (slices_total + chunks - 1) / chunks;
  chunks = (slices_total + per_slice - 1) / per_slice;
  auto slice_count = [&](size_t c) { return std::min(per_slice, slices_total - c * per_slice); };
  auto chunk = [&](size_t c) {
    return domino_buffer_t{static_cast<char*>(data.ptr) + c * per_slice * local * element,
                           slice_count(c) * local, data.dtype, -1};
  };
  auto slice = [&](size_t c) {
    return domino_buffer_t{static_cast<char*>(slices) + c * per_slice * element, slice_count(c),
                           data.dtype, -1};
  };
  std::vector<std::future<void>> rail(chunks);
  // The rail thread reads and writes these buffers: whatever happens here, it must be done
  // with them before they go. Steps not yet started are skipped.
  struct Drain {
    std::vector<std::future<void>>& rail;
    std::atomic<bool>& failed;
    ~Drain() {
      for (auto& f : rail) {
        if (!f.valid()) continue;
        failed.store(true);
        f.wait();
      }
    }
  } drain{rail, *failed_};
  for (size_t c = 0; c < chunks; ++c) {
    domino_buffer_t whole = chunk(c), mine = slice(c);
    local_.reduce_scatter(whole, mine, op);
    rail[c] = post_rail(mine, op);
    if (c == 0) continue;
    rail[c - 1].get();  // rethrows the rail's error, naming its sub-group
    domino_buffer_t done = slice(c - 1), out = chunk(c - 1);
    local_.allgather(done, out);
  }
  rail[chunks - 1].get();
  domino_buffer_t last = slice(chunks - 1), out = chunk(chunks - 1);
  local_.allgather(last, out);
}

}  // namespace domino
