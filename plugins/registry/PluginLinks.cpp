#include "PluginLinks.h"

#include "plugins/common/TransportError.h"

namespace domino {

namespace {
constexpr size_t kErrorBytes = 4096;
}

PluginLinks::PluginLinks(const domino_plugin_t* plugin, domino_comm_t* comm, int rank, int size,
                         std::string where)
    : plugin_(plugin), comm_(comm), rank_(rank), size_(size), where_(std::move(where)) {}

void PluginLinks::check(int status, const char* step, const char* err) {
  if (status == DOMINO_OK) return;
  std::string message = where_ + ": " + step + " failed";
  message += err[0] != '\0' ? std::string(": ") + err : " with status " + std::to_string(status);
  throw TransportError(static_cast<domino_status_t>(status), message);
}

void PluginLinks::post_send(int peer, const void* data, size_t bytes) {
  char err[kErrorBytes] = {0};
  check(plugin_->link_send(comm_, data, bytes, peer, err, sizeof err), "link_send", err);
}

void PluginLinks::post_recv(int peer, void* data, size_t bytes) {
  char err[kErrorBytes] = {0};
  check(plugin_->link_recv(comm_, data, bytes, peer, err, sizeof err), "link_recv", err);
}

void PluginLinks::wait() {
  char err[kErrorBytes] = {0};
  const int status = plugin_->link_wait(comm_, err, sizeof err);
  check(status, "link_wait", err);
}

}  // namespace domino
