// DeviceRuntime in builds against a CPU-only torch: there is none.
#include "DeviceRuntime.h"

namespace domino {

std::unique_ptr<DeviceRuntime> make_device_runtime() {
  return nullptr;
}

}  // namespace domino
