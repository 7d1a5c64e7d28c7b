// The one exception type inside transports; the plugin ABI boundary turns it into a status code
// and a message so no C++ exception ever crosses a shared-library edge.
#pragma once

#include <stdexcept>
#include <string>

#include "domino/plugin.h"

namespace domino {

class TransportError : public std::runtime_error {
 public:
  TransportError(domino_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  domino_status_t status() const { return status_; }

 private:
  domino_status_t status_;
};

// Runs body, returning DOMINO_OK or the status of what it threw, with the message copied to err.
template <class Body>
int guard_abi(char* err, size_t err_size, Body&& body) noexcept {
  auto report = [&](int status, const char* what) {
    if (err != nullptr && err_size > 0) {
      size_t n = 0;
      for (; what[n] != '\0' && n + 1 < err_size; ++n) err[n] = what[n];
      err[n] = '\0';
    }
    return status;
  };
  try {
    body();
    return DOMINO_OK;
  } catch (const TransportError& e) {
    return report(e.status(), e.what());
  } catch (const std::exception& e) {
    return report(DOMINO_ERR_SYSTEM, e.what());
  } catch (...) {
    return report(DOMINO_ERR_SYSTEM, "unknown C++ exception inside a domino transport");
  }
}

}  // namespace domino
