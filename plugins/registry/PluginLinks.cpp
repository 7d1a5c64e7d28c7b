#include "PluginLinks.h"

#include "plugins/common/TransportError.h"

namespace domino {

namespace {
constexpr size_t kErrorBytes = 4096;
}

PluginLinks::PluginLinks(const domino_plugin_t* plugin, domino_comm_t* comm, int rank, int size,
                         const char* op, const std::string& group)
    : plugin_(plugin), comm_(comm), rank_(rank), size_(size), op_(op), group_(group) {}

std::string PluginLinks::where() const {
  return std::string(plugin_->name) + " " + op_ + " on group '" + group_ + "' (rank " +
         std::to_string(rank_) + " of " + std::to_string(size_) + ")";
}

void PluginLinks::check(int status, const char* step, const char* err) {
  if (status == DOMINO_OK) return;
  std::string message = where() + ": " + step + " failed";
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
