// Presents a c10d store to transports as the plugin ABI's key/value rendezvous.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <string>

#include "domino/plugin.h"

namespace domino {

class StoreBootstrap {
 public:
  // Keys are prefixed with scope so that several communicators of one group never collide.
  StoreBootstrap(c10::intrusive_ptr<c10d::Store> store, std::string scope);
  StoreBootstrap(const StoreBootstrap&) = delete;
  StoreBootstrap& operator=(const StoreBootstrap&) = delete;

  const domino_bootstrap_t* table() const { return &table_; }

 private:
  static int set(void* context, const char* key, const void* data, size_t size, char* err,
                 size_t err_size);
  static int get(void* context, const char* key, void* data, size_t capacity, size_t* size,
                 int64_t timeout_ms, char* err, size_t err_size);

  c10::intrusive_ptr<c10d::Store> store_;
  std::string scope_;
  domino_bootstrap_t table_;
};

}  // namespace domino
