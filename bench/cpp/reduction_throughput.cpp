// The reduction kernels' throughput against this machine's copy bandwidth, on one core: every
// variant the CPU runs (avx512, avx2+f16c, generic; "avx512" runs the AVX2 kernels for float32),
// float32, bfloat16 and float16, 2 and 4
// inputs, at a size that lives in L2 and one that streams from memory. A STREAM-like copy
// (memcpy) and triad over the same bytes are the limits. Bytes counted are those read and
// written: (inputs + 1) * count * element size for a reduction, 2x for copy, 3x for triad.
//   domino_reduction_throughput [--csv]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "plugins/common/Dtype.h"
#include "plugins/common/ReductionVariants.h"

namespace {
using Clock = std::chrono::steady_clock;

// Best of several timed rounds, each long enough to dwarf the timer.
template <class Body>
double best_seconds(Body&& body, size_t bytes_per_call) {
  const size_t calls =
      std::max<size_t>(1, (size_t{2} << 30) / std::max<size_t>(bytes_per_call, 1) / 8);
  double best = 1e30;
  body();  // touch the pages
  for (int round = 0; round < 5; ++round) {
    const auto start = Clock::now();
    for (size_t c = 0; c < calls; ++c) body();
    const double s = std::chrono::duration<double>(Clock::now() - start).count() / calls;
    best = s < best ? s : best;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const bool csv = argc > 1 && std::string(argv[1]) == "--csv";
  if (csv) std::printf("kernel,variant,dtype,inputs,bytes_per_input,GBps\n");
  for (size_t input_bytes : {size_t{256} << 10, size_t{64} << 20}) {
    const size_t floats = input_bytes / sizeof(float);
    std::vector<float> a(floats, 1.0f), b(floats, 2.0f), c(floats, 0.0f);
    const double copy =
        2.0 * input_bytes /
        best_seconds([&] { std::memcpy(c.data(), a.data(), input_bytes); }, 2 * input_bytes) / 1e9;
    const double triad = 3.0 * input_bytes /
                         best_seconds(
                             [&] {
                               for (size_t i = 0; i < floats; ++i) c[i] = a[i] + 3.0f * b[i];
                             },
                             3 * input_bytes) /
                         1e9;
    if (csv) {
      std::printf("copy,,,,%zu,%.2f\ntriad,,,,%zu,%.2f\n", input_bytes, copy, input_bytes, triad);
    } else {
      std::printf("\n%zu KiB per input: copy %.1f GB/s, triad %.1f GB/s (bytes read + written)\n",
                  input_bytes >> 10, copy, triad);
    }
    for (int inputs : {2, 4}) {
      std::vector<std::vector<uint8_t>> in(static_cast<size_t>(inputs),
                                           std::vector<uint8_t>(input_bytes, 0x3c));
      std::vector<uint8_t> out(input_bytes);
      std::vector<const void*> ptrs;
      for (auto& v : in) ptrs.push_back(v.data());
      for (domino_dtype_t dtype : {DOMINO_FLOAT32, DOMINO_BFLOAT16, DOMINO_FLOAT16}) {
        const size_t element = dtype == DOMINO_FLOAT32 ? 4 : 2;
        const size_t count = input_bytes / element;
        for (const auto& variant : domino::runnable_reduction_variants()) {
          const size_t moved = static_cast<size_t>(inputs + 1) * input_bytes;
          const double seconds = best_seconds(
              [&] { variant.reduce(out.data(), ptrs.data(), inputs, count, dtype, DOMINO_SUM); },
              moved);
          const double gbps = moved / seconds / 1e9;
          if (csv) {
            std::printf("reduce,%s,%s,%d,%zu,%.2f\n", variant.name, domino::dtype_name(dtype),
                        inputs, input_bytes, gbps);
          } else {
            std::printf("  reduce %-9s %-8s %d inputs: %6.1f GB/s (%.2fx copy)\n", variant.name,
                        domino::dtype_name(dtype), inputs, gbps, gbps / copy);
          }
        }
      }
    }
  }
  return 0;
}
