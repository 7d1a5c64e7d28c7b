#include "Settings.h"

#include "backend/PriorityGuard.h"
#include "topology/AlgorithmTable.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace domino {

namespace {
const char* const kPrefix = "DOMINO_";

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

[[noreturn]] void invalid(const std::string& variable, const std::string& value,
                          const std::string& accepted) {
  throw ConfigError(variable + "='" + value + "' is not valid; accepted values: " + accepted +
                    ". Fix or unset " + variable + ".");
}

template <class T>
T choose(const std::string& variable, const std::string& value,
         const std::vector<std::pair<std::string, T>>& choices) {
  std::string lowered = value;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::vector<std::string> names;
  for (const auto& [name, v] : choices) {
    if (lowered == name) return v;
    names.push_back(name);
  }
  invalid(variable, value, join(names));
}

std::string transport_name(const std::string& variable, const std::string& value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
  if (!plain)
    invalid(variable, value, "auto, or a transport name made of letters, digits, '-' and '_'");
  return value;
}

// DOMINO_ALGO: a comma-separated list with at most one choice per level, e.g.
// "hierarchical,ring", "direct" or "intra:ring".
void parse_algorithms(const std::string& variable, const std::string& value, Settings& s) {
  using topology::AlgorithmHome;
  const std::string accepted =
      "auto, or a comma-separated list of at most one plan (flat, hierarchical, leader), one "
      "inter-host all-reduce algorithm (" +
      topology::algorithm_names("all_reduce", AlgorithmHome::kLinks) +
      ") and one in-host all-reduce algorithm: shared memory's own (" +
      topology::algorithm_names("all_reduce", AlgorithmHome::kShm) +
      ", or intra: before either), or intra: before an inter-host one to run it over the "
      "intra-host transport's links (e.g. intra:ring)";
  bool plan = false, inter = false, intra = false;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t end = value.find(',', start);
    std::string item = value.substr(start, end == std::string::npos ? end : end - start);
    std::transform(item.begin(), item.end(), item.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto take = [&](bool& seen) {
      if (seen) invalid(variable, value, accepted);
      seen = true;
    };
    const std::string intra_prefix = "intra:";
    const bool prefixed = item.rfind(intra_prefix, 0) == 0;
    const std::string name = prefixed ? item.substr(intra_prefix.size()) : item;
    auto serves = [&](AlgorithmHome home) {
      return topology::find_algorithm(name, "all_reduce", home) != nullptr;
    };
    if (item == "auto" && value.find(',') == std::string::npos) {
      // everything automatic
    } else if (!prefixed && (item == "flat" || item == "hierarchical" || item == "leader")) {
      take(plan);
      s.plan = item;
    } else if (!prefixed && serves(AlgorithmHome::kLinks)) {
      take(inter);
      s.inter_algorithm = item;
    } else if (serves(AlgorithmHome::kShm) || (prefixed && serves(AlgorithmHome::kLinks))) {
      take(intra);
      s.intra_algorithm = name;
    } else {
      invalid(variable, value, accepted);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

std::vector<std::string> split_path(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t end = value.find(':', start);
    const std::string part = value.substr(start, end == std::string::npos ? end : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}
}  // namespace

const std::vector<std::string>& known_variables() {
  static const std::vector<std::string> names = {
      "DOMINO_HOST_ID",          "DOMINO_ALGO",
      "DOMINO_INTRA_TRANSPORT",  "DOMINO_INTER_TRANSPORT",
      "DOMINO_PRIORITY",         "DOMINO_CHUNK_BYTES",
      "DOMINO_SHM_BYTES",        "DOMINO_TOPO_FILE",
      "DOMINO_PLUGIN_PATH",      "DOMINO_LOG",
      "DOMINO_SINGLE_COPY",      "DOMINO_COST_INTRA",
      "DOMINO_COST_INTER",       "DOMINO_GPU_TRANSPORT",
      "DOMINO_BLOCKING_WAIT",    "DOMINO_RAIL_CHUNK_BYTES",
      "DOMINO_REDUCTION_KERNELS"};
  return names;
}

uint64_t parse_bytes(const std::string& variable, const std::string& value) {
  const std::string accepted = "a positive byte count such as 4096, 64K, 8M or 1G";
  size_t digits = 0;
  while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits]))) ++digits;
  if (digits == 0 || digits > 15) invalid(variable, value, accepted);
  uint64_t number = std::stoull(value.substr(0, digits));
  const std::string suffix = value.substr(digits);
  uint64_t scale = 1;
  if (suffix == "k" || suffix == "K" || suffix == "KiB") {
    scale = 1ull << 10;
  } else if (suffix == "m" || suffix == "M" || suffix == "MiB") {
    scale = 1ull << 20;
  } else if (suffix == "g" || suffix == "G" || suffix == "GiB") {
    scale = 1ull << 30;
  } else if (!suffix.empty()) {
    invalid(variable, value, accepted);
  }
  if (number == 0) invalid(variable, value, accepted);
  return number * scale;
}

ParsedSettings parse_settings(const std::map<std::string, std::string>& env) {
  ParsedSettings parsed;
  Settings& s = parsed.settings;
  const auto& known = known_variables();
  for (const auto& [name, value] : env) {
    if (name.rfind(kPrefix, 0) != 0) continue;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      parsed.warnings.push_back("unknown variable " + name + " is ignored (known: " + join(known) +
                                ")");
      continue;
    }
    if (name == "DOMINO_HOST_ID") {
      if (value.empty()) invalid(name, value, "a non-empty host name");
      s.host_id = value;
    } else if (name == "DOMINO_ALGO") {
      parse_algorithms(name, value, s);
    } else if (name == "DOMINO_COST_INTRA" || name == "DOMINO_COST_INTER") {
      try {
        (name == "DOMINO_COST_INTRA" ? s.cost_intra : s.cost_inter) =
            topology::parse_link_cost(name, value);
      } catch (const std::invalid_argument& e) {
        throw ConfigError(std::string(e.what()) + ". Fix or unset " + name + ".");
      }
    } else if (name == "DOMINO_INTRA_TRANSPORT") {
      s.intra_transport = transport_name(name, value);
    } else if (name == "DOMINO_INTER_TRANSPORT") {
      s.inter_transport = transport_name(name, value);
    } else if (name == "DOMINO_PRIORITY") {
      s.priority = parse_priority(value, name);
    } else if (name == "DOMINO_CHUNK_BYTES") {
      s.chunk_bytes = parse_bytes(name, value);
    } else if (name == "DOMINO_RAIL_CHUNK_BYTES") {
      s.rail_chunk_bytes = value == "0" ? 0 : parse_bytes(name, value);
      if (s.rail_chunk_bytes != 0 && s.rail_chunk_bytes < (64u << 10)) {
        invalid(name, value, "0 (no pipeline) or at least 64K");
      }
    } else if (name == "DOMINO_SHM_BYTES") {
      s.shm_bytes = parse_bytes(name, value);
      if (s.shm_bytes < (1ull << 20)) invalid(name, value, "at least 1M");
    } else if (name == "DOMINO_TOPO_FILE") {
      if (access(value.c_str(), R_OK) != 0) {
        invalid(
            name, value,
            "the path of a readable hwloc XML file (" + std::string(std::strerror(errno)) + ")");
      }
      s.topology_file = value;
    } else if (name == "DOMINO_PLUGIN_PATH") {
      s.plugin_path = split_path(value);
    } else if (name == "DOMINO_SINGLE_COPY") {
      s.single_copy = choose<bool>(name, value, {{"auto", true}, {"off", false}});
    } else if (name == "DOMINO_GPU_TRANSPORT") {
      s.gpu_transport = choose<GpuTransport>(name, value,
                                             {{"auto", GpuTransport::kAuto},
                                              {"nccl", GpuTransport::kNccl},
                                              {"staged", GpuTransport::kStaged}});
    } else if (name == "DOMINO_BLOCKING_WAIT") {
      s.blocking_wait = choose<bool>(name, value, {{"0", false}, {"1", true}});
    } else if (name == "DOMINO_REDUCTION_KERNELS") {
      s.reduction_kernels = choose<std::string>(
          name, value,
          {{"auto", "auto"}, {"avx512", "avx512"}, {"avx2", "avx2+f16c"}, {"generic", "generic"}});
    } else if (name == "DOMINO_LOG") {
      s.log_level = choose<LogLevel>(name, value,
                                     {{"error", LogLevel::kError},
                                      {"warn", LogLevel::kWarn},
                                      {"info", LogLevel::kInfo},
                                      {"debug", LogLevel::kDebug}});
    }
  }
  return parsed;
}

std::map<std::string, std::string> domino_environment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const char* equals = std::strchr(*entry, '=');
    if (equals == nullptr || std::strncmp(*entry, kPrefix, std::strlen(kPrefix)) != 0) continue;
    env.emplace(std::string(*entry, static_cast<size_t>(equals - *entry)), std::string(equals + 1));
  }
  return env;
}

}  // namespace domino
