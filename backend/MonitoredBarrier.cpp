#include "MonitoredBarrier.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace domino {

namespace {
using Clock = std::chrono::steady_clock;

std::string key_of(uint64_t sequence, const std::string& what) {
  return "domino/monitored_barrier/" + std::to_string(sequence) + "/" + what;
}

// Whether key appears before deadline. Never waits on the store with a zero timeout (c10d reads
// zero as "forever").
bool appears_by(c10d::Store& store, const std::string& key, Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return store.check({key});
  try {
    store.wait({key}, left);
    return true;
  } catch (const std::exception&) {
    return store.check({key});
  }
}

std::string joined(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

[[noreturn]] void fail(const std::string& message) {
  C10_THROW_ERROR(DistBackendError, message);
}

void publish(c10d::Store& store, const std::string& key, const std::string& value) {
  store.set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

// Rank 0, after its verdict: waits until every other rank that arrived has read it (within the
// time they wait for it), so that rank 0 leaving at once cannot take the store from under them.
// everyone: all arrived, so nobody's arrival needs checking.
void await_release(c10d::Store& store, const MonitoredBarrierCall& call, bool everyone) {
  std::vector<std::string> released;
  for (int r = 1; r < call.size; ++r) {
    if (everyone || store.check({key_of(call.sequence, std::to_string(r))})) {
      released.push_back(key_of(call.sequence, "released/" + std::to_string(r)));
    }
  }
  if (released.empty()) return;
  // A live rank reads the verdict within moments; a dead one never will, and must not hold
  // rank 0 for a whole timeout.
  const auto patience = std::min(call.verdict_wait, std::chrono::milliseconds(10000));
  try {
    store.wait(released, std::max(patience, std::chrono::milliseconds(1)));
  } catch (const std::exception&) {
    // A rank that arrived and then died or hung: the verdict stands for the others.
  }
}
}  // namespace

void monitored_barrier(c10d::Store& store, const MonitoredBarrierCall& call) {
  const std::string verdict = key_of(call.sequence, "verdict");
  const std::string budget = std::to_string(call.timeout.count()) + " ms";
  if (call.rank != 0) {
    publish(store, key_of(call.sequence, std::to_string(call.rank)), "1");
    const bool told = appears_by(store, verdict, Clock::now() + call.verdict_wait);
    std::string said;
    if (told) {
      const std::vector<uint8_t> value = store.get(verdict);
      said.assign(value.begin(), value.end());
    }
    try {
      // Rank 0 hosts the store in most jobs and may exit as soon as it returns: it waits for
      // this before returning, so no rank that passed can find the store gone. Told or not:
      // a rank that gave up must not keep rank 0 waiting for it.
      publish(store, key_of(call.sequence, "released/" + std::to_string(call.rank)), "1");
    } catch (const std::exception&) {
      // Rank 0 stopped waiting (10 s at most) and left with its store: the verdict stands.
    }
    if (said == "ok") return;
    fail("Rank " + std::to_string(call.rank) +
         " successfully reached monitoredBarrier, but received errors while waiting for "
         "send/recv from rank 0. Please check rank 0 logs for faulty rank. (domino, " +
         call.label + ": " +
         (told ? said
               : "rank 0 gave no verdict within " + std::to_string(call.verdict_wait.count()) +
                     " ms") +
         ")");
  }
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + call.timeout;
  std::vector<int> missing, arrived;
  for (int r = 1; r < call.size; ++r) {
    // Gloo: without wait_all_ranks the budget is spent in rank order, and running out of it
    // before asking the next rank is rank 0's own timeout.
    if (!call.wait_all_ranks && Clock::now() >= deadline) {
      const std::string message =
          "Rank 0 timed out in monitoredBarrier after " + budget +
          ". Successfully processed ranks: " + (arrived.empty() ? "none" : joined(arrived)) +
          " (domino, " + call.label + ")";
      publish(store, verdict, message);
      await_release(store, call, /*everyone=*/false);
      fail(message);
    }
    if (appears_by(store, key_of(call.sequence, std::to_string(r)), deadline)) {
      arrived.push_back(r);
      continue;
    }
    missing.push_back(r);
    if (!call.wait_all_ranks) break;
  }
  if (missing.empty()) {
    publish(store, verdict, "ok");
    await_release(store, call, /*everyone=*/true);
    return;
  }
  const std::string message =
      // Gloo's wording: "Ranks" whenever it waited for all of them, even for one.
      "[Rank 0]: " + std::string(call.wait_all_ranks ? "Ranks " : "Rank ") + joined(missing) +
      " failed to pass monitoredBarrier in " + budget + " (domino, " + call.label +
      "). Check that these ranks reach the same monitored_barrier, or raise its timeout.";
  publish(store, verdict, message);
  await_release(store, call, /*everyone=*/false);
  fail(message);
}

}  // namespace domino
