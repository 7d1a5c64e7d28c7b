#include "RailPipeline.h"

#include <memory>
#include <vector>

#include "plugins/common/TransportError.h"

namespace domino {

RailPipeline::RailPipeline(Communicator& rail, const ThreadPlacement& rail_thread)
    : rail_(rail), rail_thread_(rail_thread.nice, rail_thread.cpus) {}

std::future<void> RailPipeline::post(size_t chunk, const RailStep& rail) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> result = done->get_future();
  // rail is the caller's; run() does not return before this job has finished or been skipped.
  rail_thread_.submit([this, chunk, &rail, done] {
    try {
      if (failed_.load()) {
        throw TransportError(DOMINO_ERR_PEER, "skipped: an earlier step of this collective failed");
      }
      rail(chunk, rail_);
      done->set_value();
    } catch (...) {
      failed_.store(true);
      done->set_exception(std::current_exception());
    }
  });
  return result;
}

void RailPipeline::run(size_t chunks, const HostStep& before, const RailStep& rail,
                       const HostStep& after) {
  failed_.store(false);
  std::vector<std::future<void>> posted(chunks);
  // The rail thread reads and writes the steps' buffers: whatever happens here, it must be done
  // with them before they go. Steps not yet started are skipped.
  struct Drain {
    std::vector<std::future<void>>& posted;
    std::atomic<bool>& failed;
    ~Drain() {
      for (auto& f : posted) {
        if (!f.valid()) continue;
        failed.store(true);
        f.wait();
      }
    }
  } drain{posted, failed_};
  for (size_t c = 0; c < chunks; ++c) {
    before(c);
    posted[c] = post(c, rail);
    if (c == 0) continue;
    posted[c - 1].get();  // rethrows the rail's error, naming its sub-group
    after(c - 1);
  }
  if (chunks == 0) return;
  posted[chunks - 1].get();
  after(chunks - 1);
}

}  // namespace domino
