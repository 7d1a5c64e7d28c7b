// The shared-memory transport's entry in the plugin ABI table.
#include "ShmPlugin.h"

#include "ShmCommunicator.h"
#include "plugins/common/PluginTable.h"

namespace {
const domino_plugin_t kShmPlugin =
    domino::PluginTable<domino::shm::ShmCommunicator>::table("shm", DOMINO_DEVICE_CPU);
}  // namespace

const domino_plugin_t* domino_shm_plugin() {
  return &kShmPlugin;
}
