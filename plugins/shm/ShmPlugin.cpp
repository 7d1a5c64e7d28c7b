// The shared-memory transport's entry in the plugin ABI table.
#include "ShmPlugin.h"

#include "../common/TransportError.h"
#include "ShmCommunicator.h"

struct domino_comm {
  domino::shm::ShmCommunicator impl;
};

namespace {
int create(const domino_comm_config_t* config, domino_comm_t** comm, char* err, size_t err_size) {
  return domino::guard_abi(err, err_size, [&] { *comm = new domino_comm{domino::shm::ShmCommunicator(*config)}; });
}

void destroy(domino_comm_t* comm) { delete comm; }

int allreduce(domino_comm_t* comm, const domino_buffer_t* send, domino_buffer_t* recv,
              domino_redop_t op, char* err, size_t err_size) {
  return domino::guard_abi(err, err_size, [&] { comm->impl.allreduce(*send, *recv, op); });
}

int barrier(domino_comm_t* comm, char* err, size_t err_size) {
  return domino::guard_abi(err, err_size, [&] { comm->impl.barrier(); });
}

const domino_plugin_v1_t kShmPlugin = {
    DOMINO_PLUGIN_ABI_VERSION, "shm", DOMINO_DEVICE_CPU, create, destroy, allreduce, barrier,
};
}  // namespace

const domino_plugin_v1_t* domino_shm_plugin() { return &kShmPlugin; }
