// Everything a user can configure through DOMINO_* variables, parsed and checked in one place.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "Priority.h"
#include "topology/CostModel.h"
#include "topology/Router.h"

namespace domino {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };
// How CUDA tensors travel: NCCL when every rank has a GPU of its own, else through host memory.
enum class GpuTransport { kAuto, kNccl, kStaged };

struct Settings {
  std::string host_id;          // empty: detect
  std::string plan = "auto";    // DOMINO_ALGO: flat, hierarchical or leader forces the plan
  std::string inter_algorithm;  // DOMINO_ALGO: ring, recursive_doubling or rabenseifner
  // DOMINO_ALGO: the in-host all-reduce, "direct", "rsag" or "single_copy" (shared memory's
  // own) or, as intra:<name>, one over the intra-host transport's links; empty: automatic.
  std::string intra_algorithm;
  std::optional<topology::TransportCost> cost_intra;  // DOMINO_COST_INTRA
  std::optional<topology::TransportCost> cost_inter;  // DOMINO_COST_INTER
  std::string intra_transport = "auto";
  std::string inter_transport = "auto";
  Priority priority = Priority::kNormal;
  uint64_t chunk_bytes = 0;  // 0: transport default
  uint64_t shm_bytes = 0;    // 0: transport default
  // DOMINO_RAIL_CHUNK_BYTES: chunks of the hierarchical plans' pipeline; 0: no pipeline.
  uint64_t rail_chunk_bytes = topology::RouterOptions{}.rail_chunk_bytes;
  bool single_copy = true;  // large messages read straight from peer processes where permitted
  std::string topology_file;
  // DOMINO_SOCKET_IFNAME: which network interfaces UCX may use (NCCL_SOCKET_IFNAME's syntax);
  // empty: the one that reaches the job's store.
  std::string socket_ifname;
  std::vector<std::string> plugin_path;
  LogLevel log_level = LogLevel::kWarn;
  GpuTransport gpu_transport = GpuTransport::kAuto;
  // Work.wait() on a CUDA collective blocks the host until it is done (else only the caller's
  // stream waits), and a collective not done within the group timeout raises.
  bool blocking_wait = false;
  // DOMINO_REDUCTION_KERNELS: "auto" (the fastest this CPU runs) or a variant's name.
  std::string reduction_kernels = "auto";
  // DOMINO_FR_DUMP_WAIT_MS: how long a failed op waits for the other ranks' Flight Recorder
  // dumps before its error reaches the caller.
  std::chrono::milliseconds fr_dump_wait{15000};
};

class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct ParsedSettings {
  Settings settings;
  std::vector<std::string> warnings;  // unknown DOMINO_* names, one sentence each
};

// Parses the DOMINO_* entries of env. Throws ConfigError naming the variable, the value and the
// accepted values for anything invalid.
ParsedSettings parse_settings(const std::map<std::string, std::string>& env);

// The DOMINO_* variables of this process's environment.
std::map<std::string, std::string> domino_environment();

// Every variable declared in SettingDeclarations, in its order.
const std::vector<std::string>& known_variables();

// "1M", "64k", "4096" -> bytes. Throws ConfigError naming variable for anything else.
uint64_t parse_bytes(const std::string& variable, const std::string& value);

// "high" | "normal" | "low" (any case); throws ConfigError naming the accepted values.
Priority parse_priority(const std::string& name, const std::string& what = "priority");

}  // namespace domino
