#include "Communicator.h"

#include "../common/TransportError.h"

namespace domino {

namespace {
constexpr size_t kErrorBytes = 4096;

[[noreturn]] void raise(const domino_plugin_v1_t* plugin, int status, const char* err,
                        const char* op) {
  std::string message = err[0] != '\0' ? err
                                       : std::string(op) + " failed in transport '" + plugin->name +
                                             "' with status " + std::to_string(status);
  throw TransportError(static_cast<domino_status_t>(status), message);
}
}  // namespace

Communicator::Communicator(const domino_plugin_v1_t* plugin, const domino_comm_config_t& config)
    : plugin_(plugin) {
  char err[kErrorBytes] = {0};
  const int status = plugin_->comm_create(&config, &comm_, err, sizeof err);
  if (status != DOMINO_OK) raise(plugin_, status, err, "communicator set-up");
}

std::unique_ptr<Communicator> Communicator::split(int color, int key,
                                                  const domino_comm_config_t& config) {
  if (plugin_->comm_split == nullptr) {
    throw TransportError(DOMINO_ERR_UNSUPPORTED, std::string("transport '") + plugin_->name +
                                                     "' cannot split communicators");
  }
  char err[kErrorBytes] = {0};
  domino_comm_t* made = nullptr;
  const int status = plugin_->comm_split(comm_, color, key, &config, &made, err, sizeof err);
  if (status != DOMINO_OK) raise(plugin_, status, err, "communicator split");
  if (made == nullptr) return nullptr;
  return std::unique_ptr<Communicator>(new Communicator(plugin_, made));
}

bool Communicator::set_timeout(int64_t timeout_ms) {
  if (plugin_->comm_set_timeout == nullptr || comm_ == nullptr) return false;
  char err[1024] = {0};
  const int status = plugin_->comm_set_timeout(comm_, timeout_ms, err, sizeof err);
  if (status != DOMINO_OK) {
    throw TransportError(static_cast<domino_status_t>(status),
                         std::string("transport '") + plugin_->name + "' set_timeout: " + err);
  }
  return true;
}

bool Communicator::abort() {
  if (plugin_->comm_abort == nullptr || comm_ == nullptr) return false;
  plugin_->comm_abort(comm_);
  return true;
}

Communicator::~Communicator() {
  if (comm_ != nullptr) plugin_->comm_destroy(comm_);
}

template <class Entry, class... Args>
void Communicator::call(Entry entry, const char* op, Args... args) {
  if (entry == nullptr) {
    throw TransportError(DOMINO_ERR_UNSUPPORTED, std::string("transport '") + plugin_->name +
                                                     "' does not implement " + op +
                                                     "; choose another with DOMINO_INTRA_TRANSPORT "
                                                     "or DOMINO_INTER_TRANSPORT");
  }
  char err[kErrorBytes] = {0};
  const int status = entry(comm_, args..., err, sizeof err);
  if (status != DOMINO_OK) raise(plugin_, status, err, op);
}

void Communicator::allreduce(const domino_buffer_t& send, domino_buffer_t& recv,
                             domino_redop_t op) {
  call(plugin_->allreduce, "allreduce", &send, &recv, op);
}

void Communicator::barrier() {
  call(plugin_->barrier, "barrier");
}

void Communicator::broadcast(domino_buffer_t& buffer, int root) {
  call(plugin_->broadcast, "broadcast", &buffer, static_cast<int32_t>(root));
}

void Communicator::reduce(const domino_buffer_t& send, domino_buffer_t& recv, domino_redop_t op,
                          int root) {
  call(plugin_->reduce, "reduce", &send, &recv, op, static_cast<int32_t>(root));
}

void Communicator::allgather(const domino_buffer_t& send, domino_buffer_t& recv) {
  call(plugin_->allgather, "allgather", &send, &recv);
}

void Communicator::reduce_scatter(const domino_buffer_t& send, domino_buffer_t& recv,
                                  domino_redop_t op) {
  call(plugin_->reduce_scatter, "reduce_scatter", &send, &recv, op);
}

void Communicator::gather(const domino_buffer_t& send, domino_buffer_t& recv, int root) {
  call(plugin_->gather, "gather", &send, &recv, static_cast<int32_t>(root));
}

void Communicator::scatter(const domino_buffer_t& send, domino_buffer_t& recv, int root) {
  call(plugin_->scatter, "scatter", &send, &recv, static_cast<int32_t>(root));
}

void Communicator::alltoall(const domino_buffer_t& send, const uint64_t* send_counts,
                            const uint64_t* send_offsets, domino_buffer_t& recv,
                            const uint64_t* recv_counts, const uint64_t* recv_offsets) {
  call(plugin_->alltoall, "alltoall", &send, send_counts, send_offsets, &recv, recv_counts,
       recv_offsets);
}

void Communicator::send(const domino_buffer_t& buffer, int peer, int tag) {
  call(plugin_->send, "send", &buffer, static_cast<int32_t>(peer), static_cast<int32_t>(tag));
}

int Communicator::recv(domino_buffer_t& buffer, int peer, int tag) {
  int32_t source = -1;
  call(plugin_->recv, "recv", &buffer, static_cast<int32_t>(peer), static_cast<int32_t>(tag),
       &source);
  return source;
}

}  // namespace domino
