#include "NcclPlugin.h"

#include "NcclCommunicator.h"
#include "plugins/common/PluginTable.h"

#include <vector>

namespace {
using Table = domino::PluginTable<domino::nccl::NcclCommunicator>;

int split(domino_comm_t* parent, int32_t color, int32_t key, const domino_comm_config_t* config,
          domino_comm_t** comm, char* err, size_t n) {
  return domino::guard_abi(err, n, [&] {
    *comm = reinterpret_cast<domino_comm_t*>(
        domino::nccl::NcclCommunicator::split(Table::self(parent), color, key, *config));
  });
}

int shrink(domino_comm_t* parent, const int32_t* exclude, int32_t exclude_count, uint32_t flags,
           const domino_comm_config_t* config, domino_comm_t** comm, char* err, size_t n) {
  return domino::guard_abi(err, n, [&] {
    *comm = reinterpret_cast<domino_comm_t*>(domino::nccl::NcclCommunicator::shrink(
        Table::self(parent), std::vector<int>(exclude, exclude + exclude_count),
        (flags & DOMINO_SHRINK_ABORT) != 0, *config));
  });
}

domino_plugin_t make_table() {
  domino_plugin_t table = Table::table("nccl", DOMINO_DEVICE_CUDA);
  // NCCL refuses every name handed down: without the named entries the backend knows that it
  // chooses for itself, hands it none and reports NCCL's choice as its own.
  table.allreduce_with = nullptr;
  table.collective_with = nullptr;
  table.comm_split = split;
  // Offered only where NCCL can: without it the backend makes the shrunk group's own.
  if (domino::nccl::NcclCommunicator::can_shrink()) table.comm_shrink = shrink;
  return table;
}

const domino_plugin_t kNcclPlugin = make_table();
}  // namespace

const domino_plugin_t* domino_nccl_plugin() {
  return &kNcclPlugin;
}
