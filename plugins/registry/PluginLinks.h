// A plugin communicator's link entries (ABI 5) as the shared algorithms' PeerLinks, so that a
// plugin that moves messages between pairs of ranks runs every collective without writing any.
#pragma once

#include <string>

#include "domino/plugin.h"
#include "plugins/algorithms/PeerLinks.h"

namespace domino {

class PluginLinks final : public algorithms::PeerLinks {
 public:
  // op and group: for messages, built only when one is needed (group outlives the links).
  PluginLinks(const domino_plugin_t* plugin, domino_comm_t* comm, int rank, int size,
              const char* op, const std::string& group);

  static bool available(const domino_plugin_t* plugin) {
    return plugin->link_send != nullptr && plugin->link_recv != nullptr &&
           plugin->link_wait != nullptr;
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void post_send(int peer, const void* data, size_t bytes) override;
  void post_recv(int peer, void* data, size_t bytes) override;
  void wait() override;
  std::string where() const override;

 private:
  void check(int status, const char* step, const char* err);

  const domino_plugin_t* plugin_;
  domino_comm_t* comm_;
  int rank_;
  int size_;
  const char* op_;
  const std::string& group_;
};

}  // namespace domino
