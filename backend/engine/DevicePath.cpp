#include "DevicePath.h"

#include <stdexcept>

namespace domino {

DevicePathChoice choose_device_path(const std::vector<std::pair<int, std::string>>& gpus,
                                    bool nccl_built, GpuTransport setting) {
  std::string shared;
  for (size_t a = 0; a < gpus.size() && shared.empty(); ++a) {
    for (size_t b = a + 1; b < gpus.size(); ++b) {
      if (gpus[a].second == gpus[b].second) {
        shared = "ranks " + std::to_string(gpus[a].first) + " and " +
                 std::to_string(gpus[b].first) + " share " + gpus[a].second;
        break;
      }
    }
  }
  if (setting == GpuTransport::kNccl) {
    if (!nccl_built) {
      throw std::invalid_argument(
          "DOMINO_GPU_TRANSPORT=nccl, but this build has no NCCL transport; unset it or set it "
          "to staged");
    }
    if (!shared.empty()) {
      throw std::invalid_argument("DOMINO_GPU_TRANSPORT=nccl needs one GPU per rank, but " +
                                  shared +
                                  "; give each rank its own GPU, or set it to staged "
                                  "or auto");
    }
  }
  if (!shared.empty()) return {false, shared};
  if (!nccl_built) return {false, "this build has no NCCL transport"};
  if (setting == GpuTransport::kStaged) return {false, "DOMINO_GPU_TRANSPORT=staged"};
  return {true, ""};
}

}  // namespace domino
