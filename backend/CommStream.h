// One CUDA comm stream a group has made, as torch_domino.topology()["cuda"] reports it. Shared
// by ProcessGroupDomino (installed) and DeviceCollectives (which makes the streams).
#pragma once

#include <string>

namespace domino {

struct CommStream {
  std::string lane;  // "high", "normal", "low", "send:P", "recv:P" or "recv:any"
  int device;
  int priority;
  int least_priority;
  int greatest_priority;
};

}  // namespace domino
