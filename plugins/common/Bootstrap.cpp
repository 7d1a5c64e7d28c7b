#include "Bootstrap.h"

#include "TransportError.h"

namespace domino {

void Bootstrap::set(const std::string& key, const std::string& value) const {
  char err[512] = {0};
  if (table_->set(table_->context, key.c_str(), value.data(), value.size(), err, sizeof err) != 0) {
    throw TransportError(DOMINO_ERR_SYSTEM, "rendezvous store set('" + key + "') failed: " + err);
  }
}

std::string Bootstrap::get(const std::string& key, std::chrono::milliseconds timeout,
                           size_t capacity) const {
  std::string value(capacity, '\0');
  size_t size = 0;
  char err[512] = {0};
  if (table_->get(table_->context, key.c_str(), value.data(), value.size(), &size, timeout.count(),
                  err, sizeof err) != 0) {
    throw TransportError(DOMINO_ERR_TIMEOUT, "rendezvous store get('" + key + "') failed: " + err);
  }
  // The table is another component's: a size past the buffer is refused, never trusted.
  if (size > capacity) {
    throw TransportError(DOMINO_ERR_SYSTEM, "rendezvous store get('" + key + "') reported " +
                                                std::to_string(size) + " bytes for a buffer of " +
                                                std::to_string(capacity) +
                                                "; the bootstrap table broke its contract "
                                                "(plugin.h, domino_bootstrap_t)");
  }
  value.resize(size);
  return value;
}

}  // namespace domino
