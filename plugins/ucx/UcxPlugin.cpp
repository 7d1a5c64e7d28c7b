#include "UcxPlugin.h"

#include "UcxCommunicator.h"
#include "plugins/common/PluginTable.h"

namespace {
const domino_plugin_t kUcxPlugin =
    domino::PluginTable<domino::ucx::UcxCommunicator>::table("ucx", DOMINO_DEVICE_CPU);
}  // namespace

const domino_plugin_t* domino_ucx_plugin() {
  return &kUcxPlugin;
}
