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

namespace {
// A plugin's own entry for an op, the ABI's entries from before collective_with, called with a
// call's arguments; kAbsent where the plugin leaves it NULL. Indexed by topology::Collective.
constexpr int kAbsent = -1000;
using NativeEntry = int (*)(const domino_plugin_t&, domino_comm_t*, const domino_call_t&, char*,
                            size_t);
constexpr NativeEntry kNativeEntries[] = {
    [](const domino_plugin_t& p, domino_comm_t* c, const domino_call_t& k, char* e, size_t n) {
      return p.allreduce ? p.allreduce(c, k.send, k.recv, k.redop, e, n) : kAbsent;
    },
    [](const domino_plugin_t& p, domino_comm_t* c, const domino_call_t& k, char* e, size_t n) {
      return p.broadcast ? p.broadcast(c, k.recv, k.root, e, n) : kAbsent;
    },
    [](const domino_plugin_t& p, domino_comm_t* c, const domino_call_t& k, char* e, size_t n) {
      return p.reduce ? p.reduce(c, k.send, k.recv, k.redop, k.root, e, n) : kAbsent;
    },
    [](const domino_plugin_t& p, domino_comm_t* c, const domino_call_t& k, char* e, size_t n) {
      return p.allgather ? p.allgather(c, k.send, k.recv, e, n) : kAbsent;
    },
    [](const domino_plugin_t& p, domino_comm_t* c, const domino_call_t& k, char* e, size_t n) {
      return p.reduce_scatter ? p.reduce_scatter(c, k.send, k.recv, k.redop, e, n) : kAbsent;
    },
    [](const domino_plugin_t& p, domino_comm_t* c, const domino_call_t& k, char* e, size_t n) {
      return p.gather ? p.gather(c, k.send, k.recv, k.root, e, n) : kAbsent;
    },
    [](const domino_plugin_t& p, domino_comm_t* c, const domino_call_t& k, char* e, size_t n) {
      return p.scatter ? p.scatter(c, k.send, k.recv, k.root, e, n) : kAbsent;
    },
    [](const domino_plugin_t& p, domino_comm_t* c, const domino_call_t& k, char* e, size_t n) {
      return p.alltoall ? p.alltoall(c, k.send, k.send_counts, k.send_offsets, k.recv,
                                     k.recv_counts, k.recv_offsets, e, n)
                        : kAbsent;
    },
    [](const domino_plugin_t& p, domino_comm_t* c, const domino_call_t&, char* e, size_t n) {
      return p.barrier ? p.barrier(c, e, n) : kAbsent;
    },
};
static_assert(std::size(kNativeEntries) == topology::kCollectiveCount,
              "one native entry per collective, in DOMINO_COLLECTIVES' order");
}  // namespace

bool Communicator::native(const domino_call_t& call, const domino_buffer_t& memory) {
  const auto op = static_cast<topology::Collective>(call.op);
  const bool links = memory.device < 0 && PluginLinks::available(plugin_);
  char err[kErrorBytes];
  err[0] = '\0';  // not 4 KiB zeroed per call: plugins write a message only on failure
  const int status = kNativeEntries[call.op](*plugin_, comm_, call, err, sizeof err);
  if (status == DOMINO_OK) return true;
  if (status == kAbsent) {
    if (!links) unsupported(topology::entry_name(op));
    return false;
  }
  // Refused (a dtype or reduction it lacks, the same on every rank): the links serve it.
  if (status == DOMINO_ERR_UNSUPPORTED && links) return false;
  raise(plugin_, status, err, topology::entry_name(op));
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
  if (op == topology::Collective::kAllReduce) {
    const size_t bytes = call.recv->count * dtype_size(call.recv->dtype);
    if (call.send->ptr != call.recv->ptr && bytes > 0) {
      std::memcpy(call.recv->ptr, call.send->ptr, bytes);
    }
  }
  const std::string_view chosen =
      algorithms::resolve_algorithm(call, algorithm, links_allreduce_, size_, small_message_bytes_);
  PluginLinks l = links(topology::entry_name(op));
  algorithms::run_algorithm(l, chosen, call);
}

void Communicator::collective(const domino_call_t& call, const std::string& algorithm) {
  if (call.op >= topology::kCollectiveCount) {
    throw TransportError(DOMINO_ERR_INVALID, "no collective has op code " +
                                                 std::to_string(call.op) + " (transport '" +
                                                 plugin_->name + "', group " + group_ + ")");
  }
  const auto op = static_cast<topology::Collective>(call.op);
  // The buffer whose memory and dtype the op's message has (a barrier has none).
  static const domino_buffer_t kNone{nullptr, 0, DOMINO_UINT8, -1};
  const domino_buffer_t* sized = topology::sized_by_output(op) ? call.recv : call.send;
  const domino_buffer_t& memory = sized != nullptr ? *sized : kNone;
  if (by_name(call, algorithm, memory)) return;
  if (native(call, memory)) return;
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
