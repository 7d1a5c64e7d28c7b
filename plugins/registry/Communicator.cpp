#include "Communicator.h"

#include <cstring>

#include "PluginLinks.h"
#include "plugins/algorithms/AlgorithmChoice.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/TransportError.h"

namespace domino {

namespace {
constexpr size_t kErrorBytes = 4096;
constexpr size_t kMaxRefusals = 64;

[[noreturn]] void raise(const domino_plugin_t* plugin, int status, const char* err,
                        const char* op) {
  // Bounded: a plugin's message need not end within the buffer.
  std::string message = err[0] != '\0' ? std::string(err, strnlen(err, kErrorBytes))
                                       : std::string(op) + " failed in transport '" + plugin->name +
                                             "' with status " + std::to_string(status);
  throw TransportError(static_cast<domino_status_t>(status), message);
}
}  // namespace

Communicator::Communicator(const domino_plugin_t* plugin, const domino_comm_config_t& config)
    : plugin_(plugin) {
  remember(config);  // first: it may refuse the configuration, and nothing is made yet
  char err[kErrorBytes];
  err[0] = '\0';  // not 4 KiB zeroed per call: plugins write a message only on failure
  const int status = plugin_->comm_create(&config, &comm_, err, sizeof err);
  if (status != DOMINO_OK) raise(plugin_, status, err, "communicator set-up");
}

Communicator::Communicator(const domino_plugin_t* plugin, domino_comm_t* comm,
                           const domino_comm_config_t& config)
    : plugin_(plugin), comm_(comm) {
  try {
    remember(config);
  } catch (...) {
    plugin_->comm_destroy(comm_);  // the destructor of an unfinished object never runs
    throw;
  }
}

void Communicator::remember(const domino_comm_config_t& config) {
  rank_ = config.rank;
  size_ = config.size;
  group_ = config.group_name != nullptr ? config.group_name : "?";
  if (config.small_message_bytes != 0) small_message_bytes_ = config.small_message_bytes;
  // A name for the shared all-reduce; a plugin with its own may take names of its own.
  if (PluginLinks::available(plugin_)) {
    try {
      links_allreduce_ = algorithms::parse_allreduce_algorithm(config.algorithm, plugin_->name);
    } catch (const TransportError&) {
      if (plugin_->allreduce == nullptr) throw;  // refused now, not at the first all-reduce
    }
  }
}

PluginLinks Communicator::links(const char* op) const {
  return PluginLinks(plugin_, comm_, rank_, size_, op, group_);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key,
                                                  const domino_comm_config_t& config) {
  if (plugin_->comm_split == nullptr) {
    throw TransportError(DOMINO_ERR_UNSUPPORTED, std::string("transport '") + plugin_->name +
                                                     "' cannot split communicators");
  }
  char err[kErrorBytes];
  err[0] = '\0';  // not 4 KiB zeroed per call: plugins write a message only on failure
  domino_comm_t* made = nullptr;
  const int status = plugin_->comm_split(comm_, color, key, &config, &made, err, sizeof err);
  if (status != DOMINO_OK) raise(plugin_, status, err, "communicator split");
  if (made == nullptr) return nullptr;
  return std::unique_ptr<Communicator>(new Communicator(plugin_, made, config));
}

std::unique_ptr<Communicator> Communicator::shrink(const std::vector<int32_t>& exclude,
                                                   bool abort_first,
                                                   const domino_comm_config_t& config) {
  if (plugin_->comm_shrink == nullptr) {
    throw TransportError(DOMINO_ERR_UNSUPPORTED, std::string("transport '") + plugin_->name +
                                                     "' cannot shrink communicators");
  }
  char err[kErrorBytes];
  err[0] = '\0';  // not 4 KiB zeroed per call: plugins write a message only on failure
  domino_comm_t* made = nullptr;
  const int status =
      plugin_->comm_shrink(comm_, exclude.data(), static_cast<int32_t>(exclude.size()),
                           abort_first ? DOMINO_SHRINK_ABORT : 0u, &config, &made, err, sizeof err);
  if (status != DOMINO_OK) raise(plugin_, status, err, "communicator shrink");
  if (made == nullptr) {
    throw TransportError(DOMINO_ERR_SYSTEM, std::string("transport '") + plugin_->name +
                                                "' shrank a communicator but returned none");
  }
  return std::unique_ptr<Communicator>(new Communicator(plugin_, made, config));
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
  if (entry == nullptr) unsupported(op);
  char err[kErrorBytes];
  err[0] = '\0';  // not 4 KiB zeroed per call: plugins write a message only on failure
  const int status = entry(comm_, args..., err, sizeof err);
  if (status != DOMINO_OK) raise(plugin_, status, err, op);
}

void Communicator::unsupported(const char* op) const {
  throw TransportError(DOMINO_ERR_UNSUPPORTED, std::string("transport '") + plugin_->name +
                                                   "' does not implement " + op +
                                                   "; choose another with DOMINO_INTRA_TRANSPORT "
                                                   "or DOMINO_INTER_TRANSPORT");
}

template <class Entry, class... Args>
bool Communicator::native(Entry entry, const char* op, const domino_buffer_t& memory,
                          Args... args) {
  const bool links = memory.device < 0 && PluginLinks::available(plugin_);
  if (entry == nullptr) {
    if (!links) unsupported(op);
    return false;
  }
  char err[kErrorBytes];
  err[0] = '\0';  // not 4 KiB zeroed per call: plugins write a message only on failure
  const int status = entry(comm_, args..., err, sizeof err);
  if (status == DOMINO_OK) return true;
  // Refused (a dtype or reduction it lacks, the same on every rank): the links serve it.
  if (status == DOMINO_ERR_UNSUPPORTED && links) return false;
  raise(plugin_, status, err, op);
}

bool Communicator::by_name(const domino_call_t& call, const std::string& algorithm,
                           const domino_buffer_t& memory) {
  if (algorithm.empty()) return false;
  const auto op = static_cast<topology::Collective>(call.op);
  const char* name = algorithm.c_str();
  // A refusal (UNSUPPORTED) is the same on every rank and comes before any message.
  auto took = [&](int status, const char* err) {
    if (status == DOMINO_OK) return true;
    if (status != DOMINO_ERR_UNSUPPORTED) {
      raise(plugin_, status, err,
            (std::string(topology::entry_name(op)) + " (" + algorithm + ")").c_str());
    }
    return false;
  };
  char err[kErrorBytes];
  err[0] = '\0';  // not 4 KiB zeroed per call: plugins write a message only on failure
  // Built only once something was refused: the common path allocates nothing for it.
  auto key = [&] {
    return std::to_string(call.op) + "|" + std::to_string(memory.dtype) + "|" +
           std::to_string(call.redop) + "|" + std::string(algorithm);
  };
  const bool asks = plugin_->collective_with != nullptr ||
                    (op == topology::Collective::kAllReduce && plugin_->allreduce_with != nullptr);
  if (asks && (refused_.empty() || !refused_.contains(key()))) {
    if (plugin_->collective_with != nullptr &&
        took(plugin_->collective_with(comm_, &call, name, err, sizeof err), err)) {
      return true;
    }
    if (op == topology::Collective::kAllReduce && plugin_->allreduce_with != nullptr &&
        took(
            plugin_->allreduce_with(comm_, call.send, call.recv, call.redop, name, err, sizeof err),
            err)) {
      return true;
    }
    if (refused_.size() >= kMaxRefusals) refused_.clear();
    refused_.insert(key());
  }
  // One of the table's algorithms over links runs over the plugin's links where it has them
  // (shared memory under DOMINO_ALGO=intra:ring).
  if (memory.device < 0 && PluginLinks::available(plugin_) &&
      algorithms::runs_over_links(op, algorithm)) {
    over_links(call, algorithm);
    return true;
  }
  return false;
}

void Communicator::over_links(const domino_call_t& call, std::string_view algorithm) {
  const auto op = static_cast<topology::Collective>(call.op);
  size_t bytes = 0;
  if (op == topology::Collective::kAllReduce) {
    bytes = call.recv->count * dtype_size(call.recv->dtype);
    if (call.send->ptr != call.recv->ptr && bytes > 0) {
      std::memcpy(call.recv->ptr, call.send->ptr, bytes);
    }
  }
  const std::string_view chosen = algorithms::resolve_algorithm(op, algorithm, links_allreduce_,
                                                                bytes, size_, small_message_bytes_);
  PluginLinks l = links(topology::entry_name(op));
  algorithms::run_algorithm(l, chosen, call);
}

namespace {
domino_call_t call_of(topology::Collective op, const domino_buffer_t* send, domino_buffer_t* recv,
                      domino_redop_t redop = DOMINO_SUM, int root = -1) {
  domino_call_t call{};
  call.op = static_cast<uint32_t>(op);
  call.send = send;
  call.recv = recv;
  call.redop = redop;
  call.root = static_cast<int32_t>(root);
  return call;
}
}  // namespace

void Communicator::allreduce(const domino_buffer_t& send, domino_buffer_t& recv, domino_redop_t op,
                             const std::string& algorithm) {
  const domino_call_t call = call_of(topology::Collective::kAllReduce, &send, &recv, op);
  if (by_name(call, algorithm, recv)) return;
  if (native(plugin_->allreduce, "allreduce", recv, &send, &recv, op)) return;
  over_links(call, {});
}

void Communicator::barrier(const std::string& algorithm) {
  domino_buffer_t host{nullptr, 0, DOMINO_UINT8, -1};
  const domino_call_t call = call_of(topology::Collective::kBarrier, &host, &host);
  if (by_name(call, algorithm, host)) return;
  if (native(plugin_->barrier, "barrier", host)) return;
  over_links(call, {});
}

void Communicator::broadcast(domino_buffer_t& buffer, int root, const std::string& algorithm) {
  const domino_call_t call =
      call_of(topology::Collective::kBroadcast, &buffer, &buffer, DOMINO_SUM, root);
  if (by_name(call, algorithm, buffer)) return;
  if (native(plugin_->broadcast, "broadcast", buffer, &buffer, static_cast<int32_t>(root))) return;
  over_links(call, {});
}

void Communicator::reduce(const domino_buffer_t& send, domino_buffer_t& recv, domino_redop_t op,
                          int root, const std::string& algorithm) {
  const domino_call_t call = call_of(topology::Collective::kReduce, &send, &recv, op, root);
  if (by_name(call, algorithm, send)) return;
  if (native(plugin_->reduce, "reduce", send, &send, &recv, op, static_cast<int32_t>(root))) return;
  over_links(call, {});
}

void Communicator::allgather(const domino_buffer_t& send, domino_buffer_t& recv,
                             const std::string& algorithm) {
  const domino_call_t call = call_of(topology::Collective::kAllGather, &send, &recv);
  if (by_name(call, algorithm, recv)) return;
  if (native(plugin_->allgather, "allgather", recv, &send, &recv)) return;
  over_links(call, {});
}

void Communicator::reduce_scatter(const domino_buffer_t& send, domino_buffer_t& recv,
                                  domino_redop_t op, const std::string& algorithm) {
  const domino_call_t call = call_of(topology::Collective::kReduceScatter, &send, &recv, op);
  if (by_name(call, algorithm, recv)) return;
  if (native(plugin_->reduce_scatter, "reduce_scatter", recv, &send, &recv, op)) return;
  over_links(call, {});
}

void Communicator::gather(const domino_buffer_t& send, domino_buffer_t& recv, int root,
                          const std::string& algorithm) {
  const domino_call_t call = call_of(topology::Collective::kGather, &send, &recv, DOMINO_SUM, root);
  if (by_name(call, algorithm, send)) return;
  if (native(plugin_->gather, "gather", send, &send, &recv, static_cast<int32_t>(root))) return;
  over_links(call, {});
}

void Communicator::scatter(const domino_buffer_t& send, domino_buffer_t& recv, int root,
                           const std::string& algorithm) {
  const domino_call_t call =
      call_of(topology::Collective::kScatter, &send, &recv, DOMINO_SUM, root);
  if (by_name(call, algorithm, recv)) return;
  if (native(plugin_->scatter, "scatter", recv, &send, &recv, static_cast<int32_t>(root))) return;
  over_links(call, {});
}

void Communicator::alltoall(const domino_buffer_t& send, const uint64_t* send_counts,
                            const uint64_t* send_offsets, domino_buffer_t& recv,
                            const uint64_t* recv_counts, const uint64_t* recv_offsets,
                            const std::string& algorithm) {
  domino_call_t call = call_of(topology::Collective::kAllToAll, &send, &recv);
  call.send_counts = send_counts;
  call.send_offsets = send_offsets;
  call.recv_counts = recv_counts;
  call.recv_offsets = recv_offsets;
  if (by_name(call, algorithm, send)) return;
  if (native(plugin_->alltoall, "alltoall", send, &send, send_counts, send_offsets, &recv,
             recv_counts, recv_offsets))
    return;
  over_links(call, {});
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
