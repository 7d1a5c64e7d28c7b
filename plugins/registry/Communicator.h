// A communicator of one transport plugin, owned in C++: calls through the ABI table and turns
// status codes back into TransportError. A collective the plugin leaves NULL runs as the shared
// algorithm over the plugin's links, when it has them (host memory). Not thread-safe per operation
// family: the backend calls collectives from one thread, sends from one and receives from one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "domino/plugin.h"
#include "plugins/algorithms/AlgorithmChoice.h"
#include "plugins/common/CallDescriptor.h"
#include "topology/Collectives.h"

namespace domino {

class PluginLinks;

class Communicator {
 public:
  Communicator(const domino_plugin_t* plugin, const domino_comm_config_t& config);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  const char* transport() const { return plugin_->name; }

  // A communicator made from this one by the plugin's comm_split, collectively over all of this
  // communicator's ranks; nullptr for a rank with color < 0. The plugin must have comm_split.
  std::unique_ptr<Communicator> split(int color, int key, const domino_comm_config_t& config);
  // Whether the plugin has comm_shrink.
  bool can_shrink() const { return plugin_->comm_shrink != nullptr; }
  // A communicator of this one's ranks without `exclude` (this communicator's ranks), made by the
  // plugin's comm_shrink collectively over the remaining ranks; abort_first ends the work in
  // flight first. The plugin must have comm_shrink.
  std::unique_ptr<Communicator> shrink(const std::vector<int32_t>& exclude, bool abort_first,
                                       const domino_comm_config_t& config);
  // From any thread: ends what is in flight (the plugin's comm_abort); false when the transport
  // cannot.
  bool abort();
  // From any thread: the timeout of operations that start from now on; false when the
  // transport keeps the one it was created with.
  bool set_timeout(int64_t timeout_ms);

  // Runs call, any collective (the ABI's descriptor, whose op is a topology::Collective), by
  // algorithm: what the router chose for it, by its table name (AlgorithmTable.h), for the
  // plugin's collective_with (allreduce_with for an all-reduce), else over its links where it
  // has them; empty, or a name it cannot take: the plugin's own entry for the op, and where it
  // has none or refuses the call, the shared algorithm over its links (host memory).
  void collective(const domino_call_t& call, const std::string& algorithm = {});
  void send(const domino_buffer_t& buffer, int peer, int tag);
  // peer < 0: any source. Returns the sender.
  int recv(domino_buffer_t& buffer, int peer, int tag);

 private:
  // Calls entry (a member of the ABI table) with the communicator, the arguments and an error
  // buffer; throws TransportError with the plugin's message on failure.
  template <class Entry, class... Args>
  void call(Entry entry, const char* op, Args... args);
  Communicator(const domino_plugin_t* plugin, domino_comm_t* comm,
               const domino_comm_config_t& config);
  void remember(const domino_comm_config_t& config);
  [[noreturn]] void unsupported(const char* op) const;
  // Runs the plugin's own entry for call's op; false where it has none, or refuses the call as
  // unsupported, and its links can serve `memory` (host memory) instead.
  bool native(const domino_call_t& call, const domino_buffer_t& memory);
  // Runs call by the router's algorithm: through the plugin's collective_with, else (for an
  // all-reduce) its allreduce_with, else over its links where the name is an algorithm over
  // links; false where none took it (the caller then runs the op's own entry). A plugin's
  // refusal of a name is remembered, so a name it never takes costs one refusal, not one a call.
  bool by_name(const domino_call_t& call, const std::string& algorithm,
               const domino_buffer_t& memory);
  // Runs call over the plugin's links by the resolved algorithm (an all-reduce in place in recv).
  void over_links(const domino_call_t& call, std::string_view algorithm);
  PluginLinks links(const char* op) const;

  const domino_plugin_t* plugin_;
  domino_comm_t* comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  std::string group_;
  std::string links_allreduce_;  // forced at creation, for the links; "" for none
  size_t small_message_bytes_ = algorithms::kDefaultSmallMessageBytes;
  // "op|dtype|redop|name" the plugin answered UNSUPPORTED (the same on every rank).
  std::unordered_set<std::string> refused_;
};

}  // namespace domino
