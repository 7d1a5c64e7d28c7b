// The shared-memory transport's entry in the plugin ABI table.
#include "ShmPlugin.h"

#include "../common/TransportError.h"
#include "ShmCommunicator.h"

struct domino_comm {
  domino::shm::ShmCommunicator impl;
};

namespace {
using domino::guard_abi;

int create(const domino_comm_config_t* config, domino_comm_t** comm, char* err, size_t n) {
  return guard_abi(err, n, [&] { *comm = new domino_comm{domino::shm::ShmCommunicator(*config)}; });
}

void destroy(domino_comm_t* comm) {
  delete comm;
}

int allreduce(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
              domino_redop_t op, char* err, size_t n) {
  return guard_abi(err, n, [&] { c->impl.allreduce(*send, *recv, op); });
}

int barrier(domino_comm_t* c, char* err, size_t n) {
  return guard_abi(err, n, [&] { c->impl.barrier(); });
}

int broadcast(domino_comm_t* c, domino_buffer_t* buffer, int32_t root, char* err, size_t n) {
  return guard_abi(err, n, [&] { c->impl.broadcast(*buffer, root); });
}

int reduce(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv, domino_redop_t op,
           int32_t root, char* err, size_t n) {
  return guard_abi(err, n, [&] { c->impl.reduce(*send, *recv, op, root); });
}

int allgather(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv, char* err,
              size_t n) {
  return guard_abi(err, n, [&] { c->impl.allgather(*send, *recv); });
}

int reduce_scatter(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                   domino_redop_t op, char* err, size_t n) {
  return guard_abi(err, n, [&] { c->impl.reduce_scatter(*send, *recv, op); });
}

int gather(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv, int32_t root,
           char* err, size_t n) {
  return guard_abi(err, n, [&] { c->impl.gather(*send, *recv, root); });
}

int scatter(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv, int32_t root,
            char* err, size_t n) {
  return guard_abi(err, n, [&] { c->impl.scatter(*send, *recv, root); });
}

int alltoall(domino_comm_t* c, const domino_buffer_t* send, const uint64_t* send_counts,
             const uint64_t* send_offsets, domino_buffer_t* recv, const uint64_t* recv_counts,
             const uint64_t* recv_offsets, char* err, size_t n) {
  return guard_abi(err, n, [&] {
    c->impl.alltoall(*send, send_counts, send_offsets, *recv, recv_counts, recv_offsets);
  });
}

int send(domino_comm_t* c, const domino_buffer_t* buffer, int32_t peer, int32_t tag, char* err,
         size_t n) {
  return guard_abi(err, n, [&] { c->impl.send(*buffer, peer, tag); });
}

int recv(domino_comm_t* c, domino_buffer_t* buffer, int32_t peer, int32_t tag, int32_t* source,
         char* err, size_t n) {
  return guard_abi(err, n, [&] {
    const int from = c->impl.recv(*buffer, peer, tag);
    if (source != nullptr) *source = from;
  });
}

const domino_plugin_v1_t kShmPlugin = {
    DOMINO_PLUGIN_ABI_VERSION,
    "shm",
    DOMINO_DEVICE_CPU,
    create,
    destroy,
    allreduce,
    barrier,
    broadcast,
    reduce,
    allgather,
    reduce_scatter,
    gather,
    scatter,
    alltoall,
    send,
    recv,
};
}  // namespace

const domino_plugin_v1_t* domino_shm_plugin() {
  return &kShmPlugin;
}
