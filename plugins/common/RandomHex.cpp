#include "RandomHex.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <random>

namespace domino {

std::string random_hex() {
  std::random_device entropy;
  std::seed_seq seed{
      entropy(),
      entropy(),
      entropy(),
      entropy(),
      static_cast<unsigned>(getpid()),
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count())};
  std::mt19937_64 bits(seed);
  const char* digits = "0123456789abcdef";
  std::string out;
  for (int word = 0; word < 2; ++word) {
    uint64_t value = bits();
    for (int i = 0; i < 16; ++i, value >>= 4) out.push_back(digits[value & 15]);
  }
  return out;
}

}  // namespace domino
