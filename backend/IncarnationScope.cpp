#include "IncarnationScope.h"

#include <c10/util/Exception.h>

#include <random>
#include <thread>
#include <vector>

namespace domino {

namespace {
constexpr const char* kScopeKey = "domino/incarnation";
// How long a rank listens for rank 0's answer under a scope before it reads the scope again: a
// stale scope is never answered, and rank 0 may publish the fresh one at any moment.
constexpr std::chrono::milliseconds kListen{200};

std::string random_hex() {
  std::random_device entropy;
  std::mt19937_64 bits((static_cast<uint64_t>(entropy()) << 32) ^ entropy());
  const char* digits = "0123456789abcdef";
  std::string out;
  for (int word = 0; word < 2; ++word) {
    uint64_t value = bits();
    for (int i = 0; i < 16; ++i, value >>= 4) out.push_back(digits[value & 15]);
  }
  return out;
}

std::string as_string(const std::vector<uint8_t>& bytes) {
  return {bytes.begin(), bytes.end()};
}
std::vector<uint8_t> as_bytes(const std::string& text) {
  return {text.begin(), text.end()};
}
}  // namespace

std::string incarnation_scope(c10d::Store& store, int rank, int size,
                              std::chrono::milliseconds timeout, const std::string& group) {
  if (rank == 0) {
    const std::string scope = "domino/" + random_hex();
    store.set(kScopeKey, as_bytes(scope));
    for (int peer = 1; peer < size; ++peer) {
      const std::string hello = scope + "/hello/" + std::to_string(peer);
      try {
        store.wait({hello}, timeout);
      } catch (const std::exception& e) {
        C10_THROW_ERROR(DistBackendError,
                        "domino: init of " + group + ": rank " + std::to_string(peer) +
                            " did not join this incarnation of the group within " +
                            std::to_string(timeout.count()) + " ms (" + e.what() +
                            "); is it running, with the same store and group?");
      }
      store.set(scope + "/welcome/" + std::to_string(peer), store.get(hello));
    }
    return scope;
  }
  const std::string token = random_hex();
  std::string last_error = "no scope published yet";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    try {
      store.wait({kScopeKey}, std::max(left, std::chrono::milliseconds(1)));
      const std::string scope = as_string(store.get(kScopeKey));
      store.set(scope + "/hello/" + std::to_string(rank), as_bytes(token));
      const std::string welcome = scope + "/welcome/" + std::to_string(rank);
      store.wait({welcome}, std::min(kListen, std::max(left, std::chrono::milliseconds(1))));
      // An earlier incarnation's welcome carries that incarnation's token.
      if (as_string(store.get(welcome)) == token) return scope;
    } catch (const c10::Error& e) {
      // Not answered within kListen (or the store hiccuped): read the scope again.
      last_error = e.what_without_backtrace();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  C10_THROW_ERROR(DistBackendError,
                  "domino: init of " + group + " (rank " + std::to_string(rank) + " of " +
                      std::to_string(size) + "): rank 0 did not admit this rank within " +
                      std::to_string(timeout.count()) + " ms (last: " + last_error +
                      "); is rank 0 running this incarnation of the group, with the same store?");
}

}  // namespace domino
