#include "FileBootstrap.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

namespace domino::testing {

FileBootstrap::FileBootstrap(std::string directory)
    : directory_(std::move(directory)), table_{this, &set, &get} {}

std::string FileBootstrap::path_for(const char* key) const {
  std::string name = key;
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  return directory_ + "/" + name;
}

int FileBootstrap::set(void* context, const char* key, const void* data, size_t size, char*,
                       size_t) {
  auto* self = static_cast<FileBootstrap*>(context);
  const std::string path = self->path_for(key);
  const std::string temp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  return std::rename(temp.c_str(), path.c_str()) == 0 ? 0 : 1;
}

int FileBootstrap::get(void* context, const char* key, void* data, size_t capacity, size_t* size,
                       int64_t timeout_ms, char* err, size_t err_size) {
  auto* self = static_cast<FileBootstrap*>(context);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    std::ifstream in(self->path_for(key), std::ios::binary);
    if (in) {
      std::string value((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (value.size() > capacity) return 1;
      std::memcpy(data, value.data(), value.size());
      *size = value.size();
      return 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::snprintf(err, err_size, "key %s never appeared", key);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string make_temp_directory() {
  char pattern[] = "/tmp/domino-test-XXXXXX";
  const char* made = mkdtemp(pattern);
  return made != nullptr ? made : "";
}

}  // namespace domino::testing
