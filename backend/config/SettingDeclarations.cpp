#include "SettingDeclarations.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "SettingParsers.h"
#include "topology/CostModel.h"
#include "topology/NetworkInterfaces.h"

namespace domino {

namespace {
using settings::choose;
using settings::invalid;

topology::TransportCost link_cost(const std::string& name, const std::string& value) {
  try {
    return topology::parse_link_cost(name, value);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string(e.what()) + ". Fix or unset " + name + ".");
  }
}

// The table's order; the wire record lists the rank 0 ones in this order too.
constexpr std::array kDeclarations = {
    SettingDeclaration{
        "DOMINO_ALGO", Agreement::kRank0,
        "`auto`, or a comma-separated list of at most one plan, one inter-host and one in-host "
        "all-reduce algorithm (e.g. `hierarchical,ring`, `direct`, `intra:ring`)",
        "`auto`",
        "Forces the plan, the inter-host all-reduce algorithm or the in-host one; see "
        "[below](#domino_algo).",
        [](const std::string& name, const std::string& value, Settings& s) {
          settings::parse_algorithms(name, value, s);
        }},
    SettingDeclaration{
        "DOMINO_COST_INTRA", Agreement::kRank0, "`LATENCY_US,GBYTES_PER_S` (e.g. `1.5,6`)",
        "measured at group creation when the group spans hosts and rank 0's host has another "
        "rank (`1.5,6` otherwise, or if that fails)",
        "The router's alpha-beta model of the intra-host transport. Setting it skips the "
        "measurement.",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.cost_intra = link_cost(name, value);
        }},
    SettingDeclaration{
        "DOMINO_COST_INTER", Agreement::kRank0, "`LATENCY_US,GBYTES_PER_S` (e.g. `30,1.2`)",
        "measured at group creation (`30,1.2` if that fails)",
        "The router's alpha-beta model of the inter-host transport. Setting it skips the "
        "measurement.",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.cost_inter = link_cost(name, value);
        }},
    SettingDeclaration{"DOMINO_SHM_BYTES", Agreement::kRank0,
                       "byte count ≥ 1M (`64M`, `1G`, `4194304`)", "1 MiB × ranks",
                       "Shared workspace of one group and lane: two payload slots per rank.",
                       [](const std::string& name, const std::string& value, Settings& s) {
                         s.shm_bytes = parse_bytes(name, value);
                         if (s.shm_bytes < (1ull << 20)) invalid(name, value, "at least 1M");
                       }},
    SettingDeclaration{
        "DOMINO_SINGLE_COPY", Agreement::kRank0, "`auto`, `off`", "`auto`",
        "`auto`: large messages are read from and written to the peer processes directly "
        "(`process_vm_readv`/`process_vm_writev`) where the group's set-up probe finds that "
        "permitted; `off`: always through the shared segment. See [below](#domino_single_copy).",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.single_copy = choose<bool>(name, value, {{"auto", true}, {"off", false}});
        }},
    SettingDeclaration{
        "DOMINO_CHUNK_BYTES", Agreement::kRank0, "byte count (`256K`, `2M`)", "512 KiB",
        "Caps the pipeline chunk of large messages (one slot), which is also how often a "
        "low-priority collective checks for higher-priority work.",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.chunk_bytes = parse_bytes(name, value);
        }},
    SettingDeclaration{
        "DOMINO_RAIL_CHUNK_BYTES", Agreement::kRank0, "`0`, or a byte count ≥ 64K (`1M`, `4M`)",
        "2 MiB",
        "Chunk size of the `hierarchical` plans' pipeline across hosts; `0`: one piece. See "
        "[below](#domino_rail_chunk_bytes).",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.rail_chunk_bytes = value == "0" ? 0 : parse_bytes(name, value);
          if (s.rail_chunk_bytes != 0 && s.rail_chunk_bytes < (64u << 10)) {
            invalid(name, value, "0 (no pipeline) or at least 64K");
          }
        }},
    SettingDeclaration{"DOMINO_INTRA_TRANSPORT", Agreement::kRank0,
                       "`auto` or a transport name (`shm`, or a loaded plugin's)",
                       "`auto` (= `shm`)", "Transport for ranks on one host.",
                       [](const std::string& name, const std::string& value, Settings& s) {
                         s.intra_transport = settings::transport_name(name, value);
                       }},
    SettingDeclaration{
        "DOMINO_INTER_TRANSPORT", Agreement::kRank0,
        "`auto` or a loaded transport's name (`ucx`, `shm`, or a plugin's)", "`auto` (= `ucx`)",
        "Transport for every step that crosses hosts. See [below](#domino_inter_transport).",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.inter_transport = settings::transport_name(name, value);
        }},
    SettingDeclaration{"DOMINO_PLUGIN_PATH", Agreement::kEachRank, "directories separated by `:`",
                       "empty",
                       "Where `libdomino-plugin-NAME.so` transport plugins are loaded from. See "
                       "[below](#domino_plugin_path).",
                       [](const std::string&, const std::string& value, Settings& s) {
                         s.plugin_path = settings::split_path(value);
                       }},
    SettingDeclaration{
        "DOMINO_GPU_TRANSPORT", Agreement::kRank0, "`auto`, `nccl`, `staged`", "`auto`",
        "How CUDA tensors travel: `auto` takes NCCL when no two ranks of the group share a GPU "
        "and this build has NCCL, else stages through host memory; `nccl` fails the first CUDA "
        "collective, naming the ranks, when two share a GPU; `staged` always goes through "
        "pinned host memory over the CPU transports.",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.gpu_transport = choose<GpuTransport>(name, value,
                                                 {{"auto", GpuTransport::kAuto},
                                                  {"nccl", GpuTransport::kNccl},
                                                  {"staged", GpuTransport::kStaged}});
        }},
    SettingDeclaration{
        "DOMINO_BLOCKING_WAIT", Agreement::kEachRank, "`0`, `1`", "`0`",
        "`1`: `Work.wait()` on a CUDA collective blocks the host until the device has finished "
        "it, and raises naming the op when that takes longer than the group timeout. `0`: only "
        "the caller's current stream waits.",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.blocking_wait = choose<bool>(name, value, {{"0", false}, {"1", true}});
        }},
    SettingDeclaration{
        "DOMINO_REDUCTION_KERNELS", Agreement::kEachRank, "`auto`, `avx512`, `avx2`, `generic`",
        "`auto`",
        "The reduction kernels of host-memory reductions; every variant gives the same bits, so "
        "ranks need not agree. See [below](#domino_reduction_kernels).",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.reduction_kernels = choose<std::string>(name, value,
                                                    {{"auto", "auto"},
                                                     {"avx512", "avx512"},
                                                     {"avx2", "avx2+f16c"},
                                                     {"generic", "generic"}});
        }},
    SettingDeclaration{"DOMINO_LOG", Agreement::kEachRank, "`error`, `warn`, `info`, `debug`",
                       "`warn`", "Log level of the `[domino rank N]` lines on stderr.",
                       [](const std::string& name, const std::string& value, Settings& s) {
                         s.log_level = choose<LogLevel>(name, value,
                                                        {{"error", LogLevel::kError},
                                                         {"warn", LogLevel::kWarn},
                                                         {"info", LogLevel::kInfo},
                                                         {"debug", LogLevel::kDebug}});
                       }},
    SettingDeclaration{
        "DOMINO_FR_DUMP_WAIT_MS", Agreement::kEachRank, "milliseconds, 0 to 86400000", "`15000`",
        "With the Flight Recorder on, how long a failed op waits for the other ranks of its "
        "group to confirm their dumps before its error reaches the caller; `0`: no wait. See "
        "[fault-tolerance.md](fault-tolerance.md#flight-recorder).",
        [](const std::string& name, const std::string& value, Settings& s) {
          const bool digits = !value.empty() && value.size() <= 8 &&
                              value.find_first_not_of("0123456789") == std::string::npos;
          const long ms = digits ? std::stol(value) : -1;
          if (ms < 0 || ms > 86400000) invalid(name, value, "milliseconds from 0 to 86400000");
          s.fr_dump_wait = std::chrono::milliseconds(ms);
        }},
    // Agreed: ranks issuing on different default lanes would pair up collectives that are not
    // the same call.
    SettingDeclaration{
        "DOMINO_PRIORITY", Agreement::kRank0, "`high`, `normal`, `low`", "`normal`",
        "Default lane of every domino group; `torch_domino.priority(...)` overrides it per "
        "thread, `Options().priority` (via `pg_options`) per group.",
        [](const std::string& name, const std::string& value, Settings& s) {
          s.priority = parse_priority(value, name);
        }},
    SettingDeclaration{
        "DOMINO_HOST_ID", Agreement::kEachRank, "any non-empty string",
        "hostname + boot id + network namespace",
        "The host identity each rank publishes to its group at init; ranks with different "
        "identities are on different hosts. Setting it per rank simulates several hosts on one "
        "machine. See [below](#domino_host_id).",
        [](const std::string& name, const std::string& value, Settings& s) {
          if (value.empty()) invalid(name, value, "a non-empty host name");
          s.host_id = value;
        }},
    // Each rank's own: interface names differ from host to host, and which ones carry a rank's
    // traffic changes nothing that its peers must match.
    SettingDeclaration{
        "DOMINO_SOCKET_IFNAME", Agreement::kEachRank,
        "comma-separated interface names or prefixes (`eth0`, `eth,ib`); a leading `^` excludes "
        "them, a leading `=` matches exactly (NCCL_SOCKET_IFNAME's syntax)",
        "the interface through which this host reaches the job's store",
        "The network interfaces UCX may use between hosts (its RDMA devices stay). "
        "`UCX_NET_DEVICES`, when set, wins. See [below](#domino_socket_ifname).",
        [](const std::string& name, const std::string& value, Settings& s) {
          try {
            (void)topology::parse_interface_pattern(value);
          } catch (const std::invalid_argument& e) {
            invalid(name, value, e.what());
          }
          s.socket_ifname = value;
        }},
    SettingDeclaration{
        "DOMINO_TOPO_FILE", Agreement::kEachRank, "path of a readable hwloc XML file",
        "live detection",
        "Host view used for binding and reported by `torch_domino.topology()` and `python -m "
        "torch_domino.topology` (e.g. `tests/cpp/fixtures/dgx-like.xml`).",
        [](const std::string& name, const std::string& value, Settings& s) {
          if (access(value.c_str(), R_OK) != 0) {
            invalid(name, value,
                    "the path of a readable hwloc XML file (" + std::string(std::strerror(errno)) +
                        ")");
          }
          s.topology_file = value;
        }},
};
}  // namespace

std::span<const SettingDeclaration> setting_declarations() {
  return kDeclarations;
}

std::vector<std::string> variable_names(std::span<const SettingDeclaration> declared) {
  std::vector<std::string> names;
  for (const SettingDeclaration& d : declared) names.emplace_back(d.name);
  return names;
}

std::vector<std::string> variable_names(std::span<const SettingDeclaration> declared,
                                        Agreement agreement) {
  std::vector<std::string> names;
  for (const SettingDeclaration& d : declared) {
    if (d.agreement == agreement) names.emplace_back(d.name);
  }
  return names;
}

}  // namespace domino
