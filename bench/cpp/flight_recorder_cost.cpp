// What the Flight Recorder costs per op, without the op: record, started and completed of an
// 8-byte all-reduce's entry, back to back (run with TORCH_FR_BUFFER_SIZE set, e.g. 2000).
//   build/<dir>/bench/domino_flight_recorder_cost [ops]
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "FlightRecorder.h"

int main(int argc, char** argv) {
  const long ops = argc > 1 ? std::atol(argv[1]) : 1000000;
  auto& recorder = domino::FlightRecorder::get();
  const std::vector<at::Tensor> tensors{at::ones({2})};
  const size_t group = recorder.add_group("0", "default_pg", {0, 1});
  for (int round = 0; round < 5; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < ops; ++i) {
      const uint64_t id = recorder.record({.group = group,
                                           .collective_seq = static_cast<uint64_t>(i),
                                           .p2p_seq = 0,
                                           .op_id = static_cast<uint64_t>(i),
                                           .name = "all_reduce",
                                           .shapes = domino::FlightRecorder::Shapes::kAsGiven,
                                           .timeout = std::chrono::milliseconds(60000)},
                                          tensors, tensors);
      recorder.started(id);
      recorder.completed(id);
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
        static_cast<double>(ops);
    std::printf("%s: %.1f ns per op (record, started, completed)\n",
                recorder.enabled() ? "recording" : "off", ns);
  }
  return 0;
}
