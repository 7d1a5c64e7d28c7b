// The shared-memory transport's entry in the plugin ABI table.
#include "ShmPlugin.h"

#include "../common/PluginTable.h"
#include "ShmCommunicator.h"

namespace {
const domino_plugin_t kShmPlugin =
    domino::PluginTable<domino::shm::ShmCommunicator>::table("shm", DOMINO_DEVICE_CPU);
}  // namespace

const domino_plugin_t* domino_shm_plugin() {
  return &kShmPlugin;
}
