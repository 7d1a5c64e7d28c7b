// Every transport the backend can route to: the built-ins, then libdomino-plugin-NAME.so files
// found on DOMINO_PLUGIN_PATH, all through the same versioned C ABI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "domino/plugin.h"

namespace domino {

class PluginRegistry {
 public:
  // The oldest plugin ABI this backend loads: the communicator config has only grown at its end
  // since, and a table from then is read up to its own last entry.
  static constexpr uint32_t kOldestAbi = 3;

  // The built-in transports plus those found in search_path (directories). Throws
  // TransportError naming the file for a library that is not a valid plugin.
  explicit PluginRegistry(const std::vector<std::string>& search_path);
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;
  ~PluginRegistry();

  // Adds a plugin table (complete: an older version's is padded with NULL entries first); origin
  // says where it came from, for messages.
  void add(const domino_plugin_t* plugin, const std::string& origin);

  const domino_plugin_t* find(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::string& origin(const std::string& name) const;

 private:
  void load_library(const std::string& path);
  static void check_version(const domino_plugin_t* plugin, const std::string& origin);

  struct Entry {
    const domino_plugin_t* plugin;
    std::string origin;
  };
  std::vector<Entry> entries_;
  std::vector<void*> libraries_;
  std::vector<std::unique_ptr<domino_plugin_t>> upgraded_;  // older plugins' tables, padded
};

}  // namespace domino
