#include "Communicator.h"

#include "../common/TransportError.h"

namespace domino {

namespace {
constexpr size_t kErrorBytes = 4096;
}

Communicator::Communicator(const domino_plugin_v1_t* plugin, const domino_comm_config_t& config)
    : plugin_(plugin) {
  char err[kErrorBytes] = {0};
  check(plugin_->comm_create(&config, &comm_, err, sizeof err), err, "communicator set-up");
}

Communicator::~Communicator() {
  if (comm_ != nullptr) plugin_->comm_destroy(comm_);
}

void Communicator::check(int status, const char* err, const char* op) const {
  if (status == DOMINO_OK) return;
  std::string message = err[0] != '\0' ? err
                                       : std::string(op) + " failed in transport '" +
                                             plugin_->name + "' with status " +
                                             std::to_string(status);
  throw TransportError(static_cast<domino_status_t>(status), message);
}

void Communicator::allreduce(const domino_buffer_t& send, domino_buffer_t& recv,
                             domino_redop_t op) {
  if (plugin_->allreduce == nullptr) {
    throw TransportError(DOMINO_ERR_UNSUPPORTED,
                         std::string("transport '") + plugin_->name + "' has no allreduce");
  }
  char err[kErrorBytes] = {0};
  check(plugin_->allreduce(comm_, &send, &recv, op, err, sizeof err), err, "allreduce");
}

void Communicator::barrier() {
  if (plugin_->barrier == nullptr) {
    throw TransportError(DOMINO_ERR_UNSUPPORTED,
                         std::string("transport '") + plugin_->name + "' has no barrier");
  }
  char err[kErrorBytes] = {0};
  check(plugin_->barrier(comm_, err, sizeof err), err, "barrier");
}

}  // namespace domino
