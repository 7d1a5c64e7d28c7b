// A communicator of one transport plugin, owned in C++: calls through the ABI table and turns
// status codes back into TransportError.
#pragma once

#include <memory>
#include <string>

#include "domino/plugin.h"

namespace domino {

class Communicator {
 public:
  Communicator(const domino_plugin_v1_t* plugin, const domino_comm_config_t& config);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  const char* transport() const { return plugin_->name; }

  void allreduce(const domino_buffer_t& send, domino_buffer_t& recv, domino_redop_t op);
  void barrier();

 private:
  void check(int status, const char* err, const char* op) const;

  const domino_plugin_v1_t* plugin_;
  domino_comm_t* comm_ = nullptr;
};

}  // namespace domino
