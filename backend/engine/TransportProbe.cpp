#include "TransportProbe.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace domino {

namespace {
constexpr int kSmallTrips = 20;
constexpr int kLargeTrips = 4;
constexpr size_t kLargeBytes = 1 << 20;

// Median seconds of `trips` runs of exchange over a buffer of `bytes`, after one warm-up run.
template <class Exchange>
double median_time(size_t bytes, int trips, Exchange&& exchange) {
  std::vector<float> data((bytes + sizeof(float) - 1) / sizeof(float));
  domino_buffer_t buffer{data.data(), data.size(), DOMINO_FLOAT32, -1};
  std::vector<double> times;
  for (int trip = 0; trip <= trips; ++trip) {
    const auto began = std::chrono::steady_clock::now();
    exchange(buffer);
    if (trip > 0) {
      times.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    }
  }
  std::nth_element(times.begin(), times.begin() + static_cast<long>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

topology::TransportCost cost_from(double small_seconds, double large_seconds) {
  topology::TransportCost cost;
  cost.latency_us = small_seconds * 1e6;
  // The latency is paid once per message; what is left of the large one's time is bandwidth.
  cost.gbytes_per_s =
      static_cast<double>(kLargeBytes) / std::max(large_seconds - small_seconds, 1e-9) / 1e9;
  cost.source = "measured";
  return cost;
}
}  // namespace

topology::TransportCost probe_transport(Communicator& comm, int comm_rank) {
  auto round_trip = [&](domino_buffer_t& buffer) {
    if (comm_rank == 0) {
      comm.send(buffer, 1, 0);
      comm.recv(buffer, 1, 0);
    } else {
      comm.recv(buffer, 0, 0);
      comm.send(buffer, 0, 0);
    }
  };
  return cost_from(median_time(8, kSmallTrips, round_trip) / 2,
                   median_time(kLargeBytes, kLargeTrips, round_trip) / 2);
}

topology::TransportCost probe_transport_by_collectives(Communicator& comm) {
  auto all_reduce = [&](domino_buffer_t& buffer) {
    comm.collective(make_call(topology::Collective::kAllReduce, buffer, buffer));
  };
  const double small = median_time(8, kSmallTrips, all_reduce);
  // An all-reduce of n bytes between two ranks: two latencies and n bytes of bandwidth.
  return cost_from(small / 2, median_time(kLargeBytes, kLargeTrips, all_reduce) - small / 2);
}

}  // namespace domino
