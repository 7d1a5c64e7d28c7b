#include "LinkProbe.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace domino {

namespace {
constexpr int kSmallTrips = 20;
constexpr int kLargeTrips = 4;
constexpr size_t kLargeBytes = 1 << 20;

// Median round-trip seconds of `trips` exchanges of `bytes`, after one warm-up trip.
double round_trip(Communicator& comm, int comm_rank, size_t bytes, int trips) {
  std::vector<char> data(bytes);
  domino_buffer_t buffer{data.data(), bytes, DOMINO_UINT8, -1};
  std::vector<double> times;
  for (int trip = 0; trip <= trips; ++trip) {
    const auto began = std::chrono::steady_clock::now();
    if (comm_rank == 0) {
      comm.send(buffer, 1, 0);
      comm.recv(buffer, 1, 0);
    } else {
      comm.recv(buffer, 0, 0);
      comm.send(buffer, 0, 0);
    }
    if (trip > 0) {
      times.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    }
  }
  std::nth_element(times.begin(), times.begin() + static_cast<long>(times.size() / 2), times.end());
  return times[times.size() / 2];
}
}  // namespace

topology::LinkCost probe_link(Communicator& comm, int comm_rank) {
  const double small = round_trip(comm, comm_rank, 8, kSmallTrips) / 2;
  const double large = round_trip(comm, comm_rank, kLargeBytes, kLargeTrips) / 2;
  topology::LinkCost cost;
  cost.latency_us = small * 1e6;
  // The latency is paid once per message; what is left of the large one's time is bandwidth.
  cost.gbytes_per_s = static_cast<double>(kLargeBytes) / std::max(large - small, 1e-9) / 1e9;
  cost.source = "measured";
  return cost;
}

}  // namespace domino
