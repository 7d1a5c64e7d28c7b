// C++ face of the ABI's key/value rendezvous: throws TransportError instead of returning codes.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "domino/plugin.h"

namespace domino {

class Bootstrap {
 public:
  explicit Bootstrap(const domino_bootstrap_t* table) : table_(table) {}

  void set(const std::string& key, const std::string& value) const;
  // capacity: the largest value expected.
  std::string get(const std::string& key, std::chrono::milliseconds timeout,
                  size_t capacity = 4096) const;

 private:
  const domino_bootstrap_t* table_;
};

}  // namespace domino
