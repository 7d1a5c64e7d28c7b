#include "PluginRegistry.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "plugins/common/Directory.h"
#include "plugins/common/TransportError.h"
#include "plugins/shm/ShmPlugin.h"
#include "plugins/ucx/UcxPlugin.h"
#if DOMINO_HAVE_NCCL
#include "plugins/nccl/NcclPlugin.h"
#endif

namespace domino {

namespace {
constexpr const char* kPrefix = "libdomino-plugin-";
constexpr const char* kSuffix = ".so";

// The table's bytes a plugin built for `version` has: each version up to 8 appended entries
// (9 none: it appended socket_interfaces to the communicator config, whose earlier fields have
// kept their layout since kOldestAbi, so an older plugin reads the config it knows).
size_t table_bytes(uint32_t version) {
  switch (version) {
    case 3:
      return offsetof(domino_plugin_t, comm_set_timeout);
    case 4:
      return offsetof(domino_plugin_t, link_send);
    case 5:
      return offsetof(domino_plugin_t, allreduce_with);
    case 6:
      return offsetof(domino_plugin_t, comm_shrink);
    case 7:
      return offsetof(domino_plugin_t, collective_with);
    default:
      return sizeof(domino_plugin_t);
  }
}

std::string versions_spoken() {
  return std::to_string(PluginRegistry::kOldestAbi) + " to " +
         std::to_string(DOMINO_PLUGIN_ABI_VERSION);
}

[[noreturn]] void reject(const std::string& origin, const std::string& why) {
  throw TransportError(DOMINO_ERR_INVALID,
                       "transport plugin " + origin + " was rejected: " + why +
                           ". Rebuild it against this version's domino/plugin.h or remove it "
                           "from DOMINO_PLUGIN_PATH.");
}
}  // namespace

PluginRegistry::PluginRegistry(const std::vector<std::string>& search_path) {
  add(domino_shm_plugin(), "built-in");
  add(domino_ucx_plugin(), "built-in");
#if DOMINO_HAVE_NCCL
  add(domino_nccl_plugin(), "built-in");
#endif
  for (const std::string& dir : search_path) {
    if (dir.empty() || !is_directory(dir)) continue;
    std::vector<std::string> files;
    for (const std::string& name : directory_entries(dir)) {
      if (name.rfind(kPrefix, 0) == 0 && name.size() > std::string(kPrefix).size() + 3 &&
          name.compare(name.size() - 3, 3, kSuffix) == 0) {
        files.push_back(dir + (dir.back() == '/' ? "" : "/") + name);
      }
    }
    std::sort(files.begin(), files.end());  // deterministic when two directories disagree
    for (const std::string& file : files) load_library(file);
  }
}

PluginRegistry::~PluginRegistry() {
  // Libraries stay loaded: communicators created from them may outlive the registry in static
  // destruction order, and unloading buys nothing at exit.
}

void PluginRegistry::load_library(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) reject(path, std::string("dlopen failed: ") + dlerror());
  auto init = reinterpret_cast<domino_plugin_init_fn>(dlsym(handle, DOMINO_PLUGIN_INIT_SYMBOL));
  if (init == nullptr) {
    dlclose(handle);
    reject(path, std::string("it does not export ") + DOMINO_PLUGIN_INIT_SYMBOL);
  }
  // Newest first: a plugin built before the last bump still serves the version it knows.
  const domino_plugin_t* plugin = nullptr;
  for (uint32_t v = DOMINO_PLUGIN_ABI_VERSION; v >= kOldestAbi && plugin == nullptr; --v) {
    plugin = init(v);
  }
  if (plugin == nullptr) {
    dlclose(handle);
    reject(path, "it serves none of the plugin ABI versions " + versions_spoken());
  }
  check_version(plugin, path);
  libraries_.push_back(handle);
  if (plugin->abi_version != DOMINO_PLUGIN_ABI_VERSION) {
    // Only the entries its version has are read; the later ones stay NULL (not offered).
    auto full = std::make_unique<domino_plugin_t>();
    std::memset(full.get(), 0, sizeof(domino_plugin_t));
    std::memcpy(full.get(), plugin, table_bytes(plugin->abi_version));
    plugin = full.get();
    upgraded_.push_back(std::move(full));
  }
  add(plugin, path);
}

void PluginRegistry::check_version(const domino_plugin_t* plugin, const std::string& origin) {
  if (plugin->abi_version < kOldestAbi || plugin->abi_version > DOMINO_PLUGIN_ABI_VERSION) {
    reject(origin, "it was built for ABI version " + std::to_string(plugin->abi_version) +
                       ", this backend speaks " + versions_spoken());
  }
}

void PluginRegistry::add(const domino_plugin_t* plugin, const std::string& origin) {
  check_version(plugin, origin);
  if (plugin->name == nullptr || plugin->name[0] == '\0') reject(origin, "it has no name");
  if (plugin->comm_create == nullptr || plugin->comm_destroy == nullptr) {
    reject(origin, "it lacks comm_create or comm_destroy");
  }
  const int links = (plugin->link_send != nullptr) + (plugin->link_recv != nullptr) +
                    (plugin->link_wait != nullptr);
  if (links != 0 && links != 3) {
    reject(origin, "it has " + std::to_string(links) +
                       " of the three link entries (link_send, link_recv, link_wait); give all "
                       "three or none");
  }
  if (find(plugin->name) != nullptr) {
    reject(origin, std::string("the name '") + plugin->name + "' is already taken by " +
                       this->origin(plugin->name));
  }
  entries_.push_back({plugin, origin});
}

const domino_plugin_t* PluginRegistry::find(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (name == e.plugin->name) return e.plugin;
  }
  return nullptr;
}

std::vector<std::string> PluginRegistry::names() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.emplace_back(e.plugin->name);
  return out;
}

const std::string& PluginRegistry::origin(const std::string& name) const {
  static const std::string unknown = "unknown";
  for (const Entry& e : entries_) {
    if (name == e.plugin->name) return e.origin;
  }
  return unknown;
}

}  // namespace domino
