#include "NcclPlugin.h"

#include "NcclCommunicator.h"
#include "plugins/common/PluginTable.h"

namespace {
using Table = domino::PluginTable<domino::nccl::NcclCommunicator>;

int split(domino_comm_t* parent, int32_t color, int32_t key, const domino_comm_config_t* config,
          domino_comm_t** comm, char* err, size_t n) {
  return domino::guard_abi(err, n, [&] {
    *comm = reinterpret_cast<domino_comm_t*>(
        domino::nccl::NcclCommunicator::split(Table::self(parent), color, key, *config));
  });
}

domino_plugin_t make_table() {
  domino_plugin_t table = Table::table("nccl", DOMINO_DEVICE_CUDA);
  table.comm_split = split;
  return table;
}

const domino_plugin_t kNcclPlugin = make_table();
}  // namespace

const domino_plugin_t* domino_nccl_plugin() {
  return &kNcclPlugin;
}
