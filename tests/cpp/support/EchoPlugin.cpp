// The smallest real transport: a one-rank communicator whose reductions are copies. Built as its
// own shared library to prove the loader, the ABI check and name routing.
#include <cstdio>
#include <cstring>

#include "domino/plugin.h"

struct domino_comm {
  int size;
};

namespace {
size_t element_bytes(domino_dtype_t dtype) {
  switch (dtype) {
    case DOMINO_FLOAT64:
    case DOMINO_INT64:
      return 8;
    case DOMINO_FLOAT32:
    case DOMINO_INT32:
      return 4;
    case DOMINO_FLOAT16:
    case DOMINO_BFLOAT16:
      return 2;
    default:
      return 1;
  }
}

int create(const domino_comm_config_t* config, domino_comm_t** comm, char* err, size_t err_size) {
  if (config->size != 1) {
    std::snprintf(err, err_size, "echo serves only one rank, asked for %d", config->size);
    return DOMINO_ERR_UNSUPPORTED;
  }
  *comm = new domino_comm{config->size};
  return DOMINO_OK;
}

void destroy(domino_comm_t* comm) {
  delete comm;
}

int allreduce(domino_comm_t*, const domino_buffer_t* send, domino_buffer_t* recv, domino_redop_t,
              char*, size_t) {
  if (send->ptr != recv->ptr)
    std::memcpy(recv->ptr, send->ptr, send->count * element_bytes(send->dtype));
  return DOMINO_OK;
}

int barrier(domino_comm_t*, char*, size_t) {
  return DOMINO_OK;
}

// Only all-reduce and barrier: the other entries stay NULL, which the backend reports as
// unsupported by this transport.
const domino_plugin_t kEcho = {
    DOMINO_PLUGIN_ABI_VERSION, "echo", DOMINO_DEVICE_CPU, create, destroy, allreduce, barrier};
}  // namespace

extern "C" __attribute__((visibility("default"))) const domino_plugin_t* domino_plugin_init(
    uint32_t abi_version) {
  return abi_version == DOMINO_PLUGIN_ABI_VERSION ? &kEcho : nullptr;
}
