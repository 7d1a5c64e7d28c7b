// The alpha-beta model of one transport: a message of n bytes between two ranks costs
// latency + n / bandwidth. The router compares plans with it. Torch-free.
#pragma once

#include <bit>
#include <cmath>
#include <string>

namespace domino::topology {

struct TransportCost {
  double latency_us = 0;           // alpha
  double gbytes_per_s = 1;         // 1 / beta
  std::string source = "default";  // "default", "configured" or "measured", for the report
  // What shared memory's own algorithms read (ShmCosts.h): the CPUs of the host (0: unknown,
  // as many as ranks), and whether its ranks may read each other's memory (DOMINO_SINGLE_COPY).
  int cpus = 0;
  bool single_copy = true;

  double seconds_for(double bytes) const {
    return latency_us * 1e-6 + bytes / (gbytes_per_s * 1e9);
  }
};

struct CostModel {
  // Shared memory on this class of machine (bench --suite shm), and UCX over TCP between hosts
  // on a 10 Gbit/s class link; both replaced by DOMINO_COST_INTRA / DOMINO_COST_INTER or by the
  // probe a multi-host group runs at init.
  TransportCost intra{1.5, 6.0, "default"};
  TransportCost inter{30.0, 1.2, "default"};
  // A rank that waits out an inter-host step it takes no part in has gone to sleep and must be
  // woken and scheduled again; measured at about 80 us with 4 ranks on 2 cores
  // (bench/multihost: leader vs hierarchical at 8 B), charged at half that.
  double idle_wakeup_us = 40.0;
};

// Terms the algorithms' cost functions share (AlgorithmTable.h).
inline double alpha_seconds(const TransportCost& c) {
  return c.latency_us * 1e-6;
}
inline double seconds_per_byte(const TransportCost& c) {
  return 1.0 / (c.gbytes_per_s * 1e9);
}
inline double log2_ceil(int n) {
  return n <= 1 ? 0.0 : std::ceil(std::log2(static_cast<double>(n)));
}
// The largest power of two at most ranks.
inline int power_of_two_below(int ranks) {
  return static_cast<int>(std::bit_floor(static_cast<unsigned>(ranks)));
}
// Power-of-two algorithms on other counts fold the extra ranks in and out: two more
// whole-message rounds, `flows` of them sharing one link.
inline double fold_seconds(int ranks, double bytes, int flows, const TransportCost& c) {
  return power_of_two_below(ranks) == ranks
             ? 0.0
             : 2 * (alpha_seconds(c) + bytes * seconds_per_byte(c) * flows);
}

// "ALPHA_US,GBYTES_PER_S" (e.g. "25,1.1") -> TransportCost marked configured. Throws
// std::invalid_argument naming variable, the value and the expected form.
TransportCost parse_link_cost(const std::string& variable, const std::string& value);

}  // namespace domino::topology
