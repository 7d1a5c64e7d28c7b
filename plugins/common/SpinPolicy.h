// Whether a thread that waits for its peers may yield its core while it spins.
//
// Only a caller running its own blocking op should: nothing else of its process wants the core
// then, and a yield hands it at once to a peer rank that shares it (four ranks on two cores,
// bench/multihost/hier_bench.py --small-only: 8-byte all-reduces across two simulated hosts took
// 92-117 us with yields, 231-251 us spinning without). A lane thread runs async work while the
// caller computes, and a yield would hand that compute a whole time slice while a message that
// landed meanwhile waits (bench/overlap/messages_under_compute.py: 16 messages of 256 KiB under
// compute cost 8.4 ms more with yields, 3.0 ms without).
#pragma once

namespace domino {

bool spin_may_yield();

// Lets the current thread yield while it spins, for the scope's lifetime.
class SpinMayYield {
 public:
  SpinMayYield();
  ~SpinMayYield();
  SpinMayYield(const SpinMayYield&) = delete;
  SpinMayYield& operator=(const SpinMayYield&) = delete;

 private:
  bool previous_;
};

}  // namespace domino
