#include "StoreBootstrap.h"

#include <chrono>
#include <cstring>

namespace domino {

namespace {
void write_error(char* err, size_t err_size, const std::string& message) {
  if (err == nullptr || err_size == 0) return;
  const size_t n = std::min(message.size(), err_size - 1);
  std::memcpy(err, message.data(), n);
  err[n] = '\0';
}
}  // namespace

StoreBootstrap::StoreBootstrap(c10::intrusive_ptr<c10d::Store> store, std::string scope)
    : store_(std::move(store)), scope_(std::move(scope)), table_{this, &set, &get} {}

int StoreBootstrap::set(void* context, const char* key, const void* data, size_t size, char* err,
                        size_t err_size) {
  auto* self = static_cast<StoreBootstrap*>(context);
  try {
    const auto* bytes = static_cast<const uint8_t*>(data);
    self->store_->set(self->scope_ + key, std::vector<uint8_t>(bytes, bytes + size));
    return 0;
  } catch (const std::exception& e) {
    write_error(err, err_size, e.what());
    return 1;
  }
}

int StoreBootstrap::get(void* context, const char* key, void* data, size_t capacity, size_t* size,
                        int64_t timeout_ms, char* err, size_t err_size) {
  auto* self = static_cast<StoreBootstrap*>(context);
  try {
    const std::string full = self->scope_ + key;
    self->store_->wait({full}, std::chrono::milliseconds(timeout_ms));
    const std::vector<uint8_t> value = self->store_->get(full);
    if (value.size() > capacity) {
      write_error(err, err_size,
                  "value of " + full + " is " + std::to_string(value.size()) +
                      " bytes, more than the " + std::to_string(capacity) +
                      " the transport expected");
      return 1;
    }
    std::memcpy(data, value.data(), value.size());
    *size = value.size();
    return 0;
  } catch (const std::exception& e) {
    write_error(err, err_size, e.what());
    return 1;
  }
}

}  // namespace domino
