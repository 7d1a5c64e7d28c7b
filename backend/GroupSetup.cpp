// Group set-up: what the ranks agree on at init (host identities, DOMINO_* settings, link
// costs), which transports they load, and where this rank's communication runs.
#include <sched.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

#include "ProcessGroupDomino.h"
#include "StoreBootstrap.h"
#include "config/Log.h"
#include "config/Record.h"
#include "config/WireSettings.h"
#include "engine/TransportProbe.h"
#include "plugins/common/Directory.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginLinks.h"
#include "plugins/registry/PluginRegistry.h"
#include "topology/AlgorithmTable.h"

namespace domino {

// Every rank publishes its host identity; every rank then reads all of them.
topology::GroupLayout ProcessGroupDomino::exchange_layout() {
  const std::string mine = topology::local_host_id(settings_.host_id);
  const std::string prefix = "domino/host/";
  store_->set(prefix + std::to_string(rank_), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<std::string> keys, ids;
  for (int r = 0; r < size_; ++r) keys.push_back(prefix + std::to_string(r));
  store_->wait(keys, timeout());
  for (const auto& key : keys) {
    const std::vector<uint8_t> value = store_->get(key);
    ids.emplace_back(value.begin(), value.end());
  }
  return topology::layout_from_host_ids(ids);
}

const domino_plugin_t* ProcessGroupDomino::loaded_transport(const char* variable,
                                                            const std::string& chosen,
                                                            const char* automatic) const {
  const std::string name = chosen == "auto" ? std::string(automatic) : chosen;
  const domino_plugin_t* plugin = registry_->find(name);
  if (plugin == nullptr) {
    std::string known;
    for (const auto& n : registry_->names()) known += (known.empty() ? "" : ", ") + n;
    TORCH_CHECK_VALUE(false, "domino: ", variable, "='", name,
                      "' names no loaded transport; accepted values: auto, ", known,
                      ". Fix the name or add its plugin directory to DOMINO_PLUGIN_PATH.");
  }
  return plugin;
}

topology::TransportCost ProcessGroupDomino::measure_link(const domino_plugin_t* plugin, int peer,
                                                         const std::string& what,
                                                         bool by_collectives) {
  std::vector<int64_t> members = {global_ranks_[0], global_ranks_[static_cast<size_t>(peer)]};
  StoreBootstrap bootstrap(store_, "domino/probe-" + what + "/");
  const std::string name = group_name_ + "/probe-" + what;
  domino_comm_config_t config{};
  config.rank = rank_ == 0 ? 0 : 1;
  config.size = 2;
  config.global_ranks = members.data();
  config.group_name = name.c_str();
  // Short: a peer that cannot answer must not hold up the group's creation for long.
  config.timeout_ms = std::min<int64_t>(timeout().count(), 10000);
  config.bootstrap = bootstrap.table();
  Communicator comm(plugin, config);
  return by_collectives ? probe_transport_by_collectives(comm) : probe_transport(comm, config.rank);
}

std::string ProcessGroupDomino::rank0s(const std::string& key, const std::string& mine) {
  if (rank_ == 0) {
    store_->set(key, std::vector<uint8_t>(mine.begin(), mine.end()));
    return mine;
  }
  store_->wait({key}, timeout());
  const std::vector<uint8_t> value = store_->get(key);
  return std::string(value.begin(), value.end());
}

AdoptedEnvironment ProcessGroupDomino::agree_on_wire_settings(
    const std::map<std::string, std::string>& env) {
  std::string record;
  try {
    record = rank0s("domino/settings", wire_record(env));
  } catch (const std::exception& e) {
    C10_THROW_ERROR(DistBackendError,
                    std::string("domino: init of ") + label() +
                        " failed while ranks agreed on DOMINO_* settings: " + e.what());
  }
  try {
    return adopt_wire_settings(env, record, rank_);
  } catch (const std::invalid_argument& e) {
    C10_THROW_ERROR(DistBackendError,
                    std::string("domino: init of ") + label() + " failed: " + e.what());
  }
}

topology::Router ProcessGroupDomino::agree_on_routing(const std::string& host_list) {
  topology::CostModel costs;
  // Rank 0 and one peer measure each link the router weighs; everyone adopts rank 0's figures.
  auto measure = [&](topology::TransportCost& cost, const domino_plugin_t* plugin, int peer,
                     const char* what, const char* variable, bool by_collectives) {
    if (rank_ != 0 && rank_ != peer) return;
    try {
      cost = measure_link(plugin, peer, what, by_collectives);
    } catch (const std::exception& e) {
      log_line(LogLevel::kWarn, rank_,
               label() + ": could not measure the " + what + "-host link (" + e.what() +
                   "); the router keeps its default costs. Set " + variable +
                   " to this machine's figures.");
    }
  };
  if (settings_.cost_inter) {
    costs.inter = *settings_.cost_inter;
  } else if (!layout_.single_host()) {
    measure(costs.inter, inter_plugin_, layout_.host_ranks[1].front(), "inter", "DOMINO_COST_INTER",
            false);
  }
  // Only groups across hosts weigh in-host steps against the network; one host has one plan.
  if (settings_.cost_intra) {
    costs.intra = *settings_.cost_intra;
  } else if (!layout_.single_host() && layout_.host_ranks[0].size() > 1) {
    // The router prices in-host steps as collectives (single-copy reads), not as sends.
    measure(costs.intra, plugin_, layout_.host_ranks[0][1], "intra", "DOMINO_COST_INTRA", true);
  }
  // The plan settings are rank 0's already (agree_on_wire_settings); the measured costs are
  // rank 0's too, where nothing was configured.
  RecordFields mine;
  for (const auto& [level, cost] : {std::pair{"intra", &costs.intra}, {"inter", &costs.inter}}) {
    mine.emplace_back(std::string(level) + ".latency_us", exact_number(cost->latency_us));
    mine.emplace_back(std::string(level) + ".gbytes_per_s", exact_number(cost->gbytes_per_s));
    mine.emplace_back(std::string(level) + ".source", cost->source);
  }
  // Whether the router's all-reduce names reach the inter-host transport: every rank must hand
  // them down alike, or one runs the named algorithm while another runs the plugin's own.
  const bool inter_runs_table = runs_algorithm_table(inter_plugin_);
  mine.emplace_back("inter.runs_table", inter_runs_table ? "1" : "0");
  // Shared memory's single-copy paths need a CPU per rank; every rank prices them with rank 0's
  // count, so all take the same path.
  mine.emplace_back("intra.cpus",
                    std::to_string(std::max(1u, std::thread::hardware_concurrency())));
  // Which of the table's names the intra-host transport takes per call: shared memory's own; a
  // plugin with only links runs those over links; any other keeps its own choice. It decides how
  // in-host steps are priced, so every rank must see the same.
  const std::string intra_home = std::string_view(plugin_->name) == "shm" ? "shm"
                                 : plugin_->allreduce == nullptr && PluginLinks::available(plugin_)
                                     ? "links"
                                     : "own";
  mine.emplace_back("intra.home", intra_home);
  const std::string agreed = rank0s("domino/routing", encode_record(mine));
  std::map<std::string, std::string> fields;
  bool rank0_runs_table = inter_runs_table;
  std::string rank0_intra_home = intra_home;
  try {
    fields = decode_record(agreed, "rank 0's routing record");
    for (auto& [level, cost] : {std::pair{"intra", &costs.intra}, {"inter", &costs.inter}}) {
      const std::string prefix(level);
      *cost = {std::stod(fields.at(prefix + ".latency_us")),
               std::stod(fields.at(prefix + ".gbytes_per_s")), fields.at(prefix + ".source")};
    }
    rank0_runs_table = fields.at("inter.runs_table") == "1";
    costs.intra.cpus = std::stoi(fields.at("intra.cpus"));
    rank0_intra_home = fields.at("intra.home");
  } catch (const std::exception& e) {
    C10_THROW_ERROR(DistBackendError, std::string("domino: init of ") + label() +
                                          ": rank 0's routing record '" + agreed +
                                          "' cannot be read (" + e.what() +
                                          "); mixed torch-domino versions?");
  }
  TORCH_CHECK(
      rank0_runs_table == inter_runs_table, "domino: init of ", label(),
      ": the inter-host transport '", inter_plugin_->name, "' here ",
      inter_runs_table ? "takes" : "does not take",
      " the router's algorithm per call (plugin ABI collective_with, allreduce_with or links), "
      "but rank 0's ",
      rank0_runs_table ? "does" : "does not",
      "; every rank must load the same build of that plugin (check DOMINO_PLUGIN_PATH on "
      "each host).");
  TORCH_CHECK(rank0_intra_home == intra_home, "domino: init of ", label(),
              ": the intra-host transport '", plugin_->name, "' here runs ",
              intra_home == "own" ? "its own algorithms" : "the table's " + intra_home + " names",
              " per call, but rank 0's runs ",
              rank0_intra_home == "own" ? "its own" : "the table's " + rank0_intra_home + " names",
              "; every rank must load the same build of that plugin (check DOMINO_PLUGIN_PATH on "
              "each host).");
  topology::RouterOptions options;
  if (settings_.plan == "flat") {
    // One communicator over the group: the intra-host transport on one host (name another with
    // DOMINO_INTRA_TRANSPORT), the inter-host one across hosts.
    options.forced_plan =
        layout_.single_host() ? topology::PlanKind::kFlatIntra : topology::PlanKind::kFlatInter;
  } else if (settings_.plan == "hierarchical") {
    options.forced_plan = topology::PlanKind::kHierarchical;
  } else if (settings_.plan == "leader") {
    options.forced_plan = topology::PlanKind::kLeader;
  }
  options.forced_inter_algorithm = settings_.inter_algorithm;
  options.inter_runs_table = inter_runs_table;
  // A links algorithm inside the host needs a transport that runs names or has links (shared
  // memory has); shared memory's own names reach it at creation (comm_config), not per call.
  options.forced_intra_algorithm = settings_.intra_algorithm;
  const bool intra_links = topology::find_algorithm(settings_.intra_algorithm, "all_reduce",
                                                    topology::AlgorithmHome::kLinks) != nullptr;
  TORCH_CHECK(!intra_links || runs_algorithm_table(plugin_) || PluginLinks::available(plugin_),
              "domino: init of ", label(), ": DOMINO_ALGO=intra:", settings_.intra_algorithm,
              " runs that all-reduce over the intra-host transport's links, but '", plugin_->name,
              "' has neither links nor collective_with or allreduce_with (plugin ABI); use the shm "
              "transport "
              "(DOMINO_INTRA_TRANSPORT=auto) or drop intra:",
              settings_.intra_algorithm, ".");
  options.rail_chunk_bytes = settings_.rail_chunk_bytes;
  costs.intra.single_copy = settings_.single_copy;
  options.intra_home = intra_home == "shm"     ? std::optional(topology::AlgorithmHome::kShm)
                       : intra_home == "links" ? std::optional(topology::AlgorithmHome::kLinks)
                                               : std::nullopt;
  // Shared memory's own names (direct, rsag, single_copy) mean nothing to another transport.
  const bool intra_shm_name = topology::find_algorithm(settings_.intra_algorithm, "all_reduce",
                                                       topology::AlgorithmHome::kShm) != nullptr;
  TORCH_CHECK(!intra_shm_name || intra_home == "shm", "domino: init of ", label(),
              ": DOMINO_ALGO names shared memory's in-host all-reduce '", settings_.intra_algorithm,
              "', but the intra-host transport is '", plugin_->name,
              "'; use the shm transport (DOMINO_INTRA_TRANSPORT=auto) or drop '",
              settings_.intra_algorithm, "' from DOMINO_ALGO.");
  log_line(LogLevel::kDebug, rank_, label() + ": host layout " + host_list);
  return topology::Router(layout_, costs, options);
}

bool ProcessGroupDomino::runs_algorithm_table(const domino_plugin_t* plugin) {
  // A transport whose own all-reduce takes no name chooses for itself: the report says so.
  return plugin->allreduce_with != nullptr || plugin->collective_with != nullptr ||
         (plugin->allreduce == nullptr && PluginLinks::available(plugin));
}

std::vector<topology::RoutingRow> ProcessGroupDomino::routing_report(
    const std::vector<size_t>& sizes) const {
  return topology::routing_report(*router_, sizes);
}

const topology::HostTopology& ProcessGroupDomino::host() const {
  // One hwloc scan per process and file: every group of the process asks at init.
  static std::mutex mutex;
  static std::map<std::string, topology::HostTopology> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(settings_.topology_file);
  if (found == loaded.end()) {
    found =
        loaded
            .emplace(settings_.topology_file, topology::load_host_topology(settings_.topology_file))
            .first;
  }
  return found->second;
}

void ProcessGroupDomino::bind() {
  std::vector<int> allowed;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) allowed.push_back(cpu);
    }
  }
  try {
    const topology::HostTopology& topo = host();
    binding_ = topology::choose_binding(topo, layout_.local_rank[static_cast<size_t>(rank_)],
                                        layout_.local_size(rank_), allowed);
    // Rail alignment: with several NICs, UCX uses the one next to this rank's node, unless the
    // user chose (UCX's own UCX_NET_DEVICES wins). UCX reads it when it starts, once per process.
    if (!layout_.single_host() && topo.nics.size() > 1 && !binding_.nic.empty() &&
        std::getenv("UCX_NET_DEVICES") == nullptr &&
        path_exists("/sys/class/net/" + binding_.nic)) {
      setenv("UCX_NET_DEVICES", binding_.nic.c_str(), 0);
    }
  } catch (const std::exception& e) {
    binding_ = topology::Binding{};
    binding_.cpus = allowed;
    log_line(LogLevel::kWarn, rank_,
             label() + ": no host topology (" + e.what() + "); progress threads stay unbound");
  }
}

}  // namespace domino
