#include "UcxPlugin.h"

#include "../common/PluginTable.h"
#include "UcxCommunicator.h"

namespace {
const domino_plugin_t kUcxPlugin =
    domino::PluginTable<domino::ucx::UcxCommunicator>::table("ucx", DOMINO_DEVICE_CPU);
}  // namespace

const domino_plugin_t* domino_ucx_plugin() {
  return &kUcxPlugin;
}
