// A rendezvous store in a temporary directory, for forked test processes.
#pragma once

#include <string>

#include "domino/plugin.h"

namespace domino::testing {

class FileBootstrap {
 public:
  explicit FileBootstrap(std::string directory);
  const domino_bootstrap_t* table() const { return &table_; }

 private:
  static int set(void* context, const char* key, const void* data, size_t size, char* err,
                 size_t err_size);
  static int get(void* context, const char* key, void* data, size_t capacity, size_t* size,
                 int64_t timeout_ms, char* err, size_t err_size);
  std::string path_for(const char* key) const;

  std::string directory_;
  domino_bootstrap_t table_;
};

// A fresh empty directory under /tmp, removed by the caller.
std::string make_temp_directory();

}  // namespace domino::testing
