#include "IncarnationScope.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "plugins/common/RandomHex.h"

namespace domino {

namespace {
constexpr const char* kScopeKey = "domino/incarnation";
// How long a rank listens for rank 0's answer under a scope before it reads the scope again: a
// stale scope is never answered, and rank 0 may publish the fresh one at any moment.
constexpr std::chrono::milliseconds kListen{200};
// Between reads of a stale scope: from 50 ms up to 1 s, so ranks that start long before rank 0
// do not hammer a store that also serves the launcher.
constexpr std::chrono::milliseconds kFirstPause{50};
constexpr std::chrono::milliseconds kLongestPause{1000};

std::string as_string(const std::vector<uint8_t>& bytes) {
  return {bytes.begin(), bytes.end()};
}
std::vector<uint8_t> as_bytes(const std::string& text) {
  return {text.begin(), text.end()};
}
// False when `key` did not appear within `timeout`; a broken connection to the store throws.
bool appeared(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout) {
  try {
    store.wait({key}, timeout);
    return true;
  } catch (const c10::DistNetworkError&) {
    throw;
  } catch (const c10::Error&) {
    return false;
  }
}

std::string seconds(std::chrono::milliseconds duration) {
  return std::to_string(duration.count() / 1000) + "." +
         std::to_string(duration.count() % 1000 / 100) + " s";
}
}  // namespace

std::string incarnation_scope(c10d::Store& store, int rank, int size,
                              std::chrono::milliseconds timeout, const std::string& group) {
  // c10d's "no timeout" is 0.
  const auto limit = timeout.count() > 0 ? timeout
                                         : std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::hours(24 * 365 * 10));
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto left = [&] {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()),
                    std::chrono::milliseconds(1));
  };
  // A broken connection to the store is not a slow peer: said at once, not at the timeout.
  auto store_failed = [&](const c10::DistNetworkError& e) {
    C10_THROW_ERROR(DistBackendError, "domino: init of " + group +
                                          ": the store failed while the group was forming (" +
                                          e.what_without_backtrace() +
                                          "); is the store's server (rank 0 or the launcher) up?");
  };
  if (rank == 0) {
    const std::string scope = "domino/" + random_hex();
    try {
      store.set(kScopeKey, as_bytes(scope));
      for (int peer = 1; peer < size; ++peer) {
        const std::string hello = scope + "/hello/" + std::to_string(peer);
        if (!appeared(store, hello, left())) {
          C10_THROW_ERROR(DistBackendError,
                          "domino: init of " + group + ": rank " + std::to_string(peer) +
                              " did not join this incarnation of the group within " +
                              seconds(limit) + "; is it running, with the same store and group?");
        }
        store.set(scope + "/welcome/" + std::to_string(peer), store.get(hello));
      }
    } catch (const c10::DistNetworkError& e) {
      store_failed(e);
    }
    return scope;
  }
  const std::string token = random_hex();
  std::string last = "no scope was published";
  auto pause = kFirstPause;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (!appeared(store, kScopeKey, left())) break;
      const std::string scope = as_string(store.get(kScopeKey));
      store.set(scope + "/hello/" + std::to_string(rank), as_bytes(token));
      const std::string welcome = scope + "/welcome/" + std::to_string(rank);
      if (!appeared(store, welcome, std::min(kListen, left()))) {
        last = "scope " + scope + " was published, but nobody answered this rank under it";
        continue;
      }
      // An earlier incarnation's welcome carries that incarnation's token.
      if (as_string(store.get(welcome)) == token) return scope;
      last = "scope " + scope + " is a dead incarnation's (its answer carries another token)";
    } catch (const c10::DistNetworkError& e) {
      store_failed(e);
    }
    std::this_thread::sleep_for(std::min(pause, left()));
    pause = std::min(pause * 2, kLongestPause);
  }
  C10_THROW_ERROR(DistBackendError,
                  "domino: init of " + group + ": rank 0 did not admit this rank within " +
                      seconds(limit) + " (last: " + last +
                      "); is rank 0 running this incarnation of the group, with the same store?");
}

}  // namespace domino
