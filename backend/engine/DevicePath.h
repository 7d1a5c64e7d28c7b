// How a group's (or a pair's) CUDA tensors travel, decided from where each rank's GPU is.
// Torch-free, so the decision is tested without a GPU.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/Settings.h"

namespace domino {

struct DevicePathChoice {
  bool nccl = false;
  std::string why;  // for staging: the reason, for the log line
};

// gpus: (group rank, "host GPU uuid") of every rank that takes part. NCCL needs one GPU per rank
// and a build with NCCL; DOMINO_GPU_TRANSPORT (setting) may force either. Throws
// std::invalid_argument, naming the ranks or the setting, when nccl is forced but impossible.
DevicePathChoice choose_device_path(const std::vector<std::pair<int, std::string>>& gpus,
                                    bool nccl_built, GpuTransport setting);

}  // namespace domino
