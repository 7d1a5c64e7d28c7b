// Group set-up: what the ranks agree on at init (host identities, DOMINO_* settings, link
// costs), which transports they load, and where this rank's communication runs.
#include <sched.h>

#include <c10/util/Type.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <typeinfo>

#include "ProcessGroupDominoImpl.h"
#include "StoreBootstrap.h"
#include "config/Log.h"
#include "config/Record.h"
#include "config/WireSettings.h"
#include "engine/TransportProbe.h"
#include "plugins/common/Directory.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginLinks.h"
#include "plugins/registry/PluginRegistry.h"
#include "plugins/ucx/UcxNetDevices.h"
#include "topology/AlgorithmTable.h"
#include "topology/NetworkInterfaces.h"

namespace domino {

// Every rank publishes its host identity; every rank then reads all of them.
topology::GroupLayout ProcessGroupDomino::Impl::exchange_layout() {
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

const domino_plugin_t* ProcessGroupDomino::Impl::loaded_transport(const char* variable,
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

topology::TransportCost ProcessGroupDomino::Impl::measure_link(const domino_plugin_t* plugin,
                                                               int peer, const std::string& what,
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
  config.socket_interfaces = socket_interfaces_.c_str();
  Communicator comm(plugin, config);
  return by_collectives ? probe_transport_by_collectives(comm) : probe_transport(comm, config.rank);
}

std::string ProcessGroupDomino::Impl::rank0s(const std::string& key, const std::string& mine) {
  if (rank_ == 0) {
    store_->set(key, std::vector<uint8_t>(mine.begin(), mine.end()));
    return mine;
  }
  store_->wait({key}, timeout());
  const std::vector<uint8_t> value = store_->get(key);
  return std::string(value.begin(), value.end());
}

AdoptedEnvironment ProcessGroupDomino::Impl::agree_on_wire_settings(
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

topology::Router ProcessGroupDomino::Impl::agree_on_routing(const std::string& host_list) {
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
  // DOMINO_ALGO's plan, which the router resolves in this layout ("flat": one communicator over
  // the group, the intra-host transport on one host, the inter-host one across hosts).
  if (settings_.plan != "auto") options.forced_plan = settings_.plan;
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

bool ProcessGroupDomino::Impl::runs_algorithm_table(const domino_plugin_t* plugin) {
  // A transport whose own all-reduce takes no name chooses for itself: the report says so.
  return plugin->allreduce_with != nullptr || plugin->collective_with != nullptr ||
         (plugin->allreduce == nullptr && PluginLinks::available(plugin));
}

std::vector<topology::RoutingRow> ProcessGroupDomino::Impl::routing_report(
    const std::vector<size_t>& sizes) const {
  return topology::routing_report(*router_, sizes);
}

const topology::HostTopology& ProcessGroupDomino::Impl::host() const {
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

void ProcessGroupDomino::Impl::bind() {
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
    // Rail alignment: with several NICs, UCX may use the one next to this rank's node
    // (choose_socket_interfaces() decides whether it does).
    if (!layout_.single_host() && topo.nics.size() > 1 && !binding_.nic.empty() &&
        path_exists("/sys/class/net/" + binding_.nic)) {
      rail_interface_ = binding_.nic;
    }
  } catch (const std::exception& e) {
    binding_ = topology::Binding{};
    binding_.cpus = allowed;
    log_line(LogLevel::kWarn, rank_,
             label() + ": no host topology (" + e.what() + "); progress threads stay unbound");
  }
}

namespace {
// UCX reads its network devices once per process, so the process's first group decides them.
struct FirstInterfaceChoice {
  std::string interfaces;
  std::string rule;
  std::string group;
};
std::mutex first_choice_mutex;
std::optional<FirstInterfaceChoice> first_choice;

// The host of the job's store when it is a TCPStore (the ranks reach it through the network);
// else "" and what it is, in *kind.
std::string tcp_store_host(const c10::intrusive_ptr<c10d::Store>& store, uint16_t* port,
                           std::string* kind) {
  c10::intrusive_ptr<c10d::Store> base = store;
  if (auto* prefixed = dynamic_cast<c10d::PrefixStore*>(base.get())) {
    base = prefixed->getUnderlyingNonPrefixStore();
  }
  if (const auto* tcp = dynamic_cast<const c10d::TCPStore*>(base.get())) {
    *port = tcp->getPort();
    return tcp->getHost();
  }
  const c10d::Store& what = *base;
  *kind = "the job's store is a " + c10::demangle(typeid(what).name()) +
          ", which names no host to reach (one host's store)";
  return "";
}
}  // namespace

std::vector<std::string> ProcessGroupDomino::Impl::other_hosts_toward_store(const std::string& mine,
                                                                            bool wanted) {
  const std::string prefix = "domino/route/";
  if (layout_.local_rank[static_cast<size_t>(rank_)] == 0) {
    store_->set(prefix + std::to_string(rank_), std::vector<uint8_t>(mine.begin(), mine.end()));
  }
  std::vector<std::string> found;
  const int my_host = layout_.host_of_rank[static_cast<size_t>(rank_)];
  try {
    // The first address another host reached the store from is enough.
    for (size_t h = 0; wanted && found.empty() && h < layout_.hosts.size(); ++h) {
      if (static_cast<int>(h) == my_host) continue;
      const std::string key = prefix + std::to_string(layout_.host_ranks[h].front());
      store_->wait({key}, timeout());
      const std::vector<uint8_t> address = store_->get(key);
      if (!address.empty()) found.emplace_back(address.begin(), address.end());
    }
  } catch (const std::exception& e) {
    // A host that never publishes fails the group's set-up later, naming it; here UCX only
    // loses the hint.
    log_line(LogLevel::kInfo, rank_,
             label() + ": no other host's address toward the store (" + e.what() + ")");
  }
  return found;
}

void ProcessGroupDomino::Impl::choose_socket_interfaces() {
  topology::InterfaceInputs inputs;
  inputs.pattern = settings_.socket_ifname;
  const char* user_devices = std::getenv("UCX_NET_DEVICES");
  inputs.user_net_devices = user_devices != nullptr ? user_devices : "";
  if (layout_.single_host() && inputs.pattern.empty()) {
    // No traffic between hosts: nothing to choose by default, and nothing to fix for the
    // process's later groups (Megatron makes dozens of in-host groups).
    std::lock_guard<std::mutex> lock(first_choice_mutex);
    socket_interfaces_ = first_choice ? first_choice->interfaces : "";
    network_rule_ =
        first_choice ? first_choice->rule : std::string("a group on one host chooses no interface");
    ucx_net_devices_ = !inputs.user_net_devices.empty() ? inputs.user_net_devices
                       : socket_interfaces_.empty()
                           ? std::string()
                           : ucx::net_devices_value(socket_interfaces_, ucx::active_rdma_ports());
    return;
  }
  inputs.store_host = tcp_store_host(store_, &inputs.store_port, &inputs.store_kind);
  inputs.rail_interface = rail_interface_;
  const std::vector<topology::NetworkInterface> here = topology::local_interfaces();
  if (!layout_.single_host() && !inputs.store_host.empty()) {
    const std::string mine =
        topology::network_address_toward(inputs.store_host, inputs.store_port, here);
    const bool by_default = inputs.user_net_devices.empty() && inputs.pattern.empty();
    inputs.peer_addresses = other_hosts_toward_store(mine, by_default && mine.empty());
  }
  topology::InterfaceChoice choice;
  try {
    choice = topology::choose_interfaces(inputs, here);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, "domino: init of ", label(), " failed: ", e.what(), ".");
  }
  if (!inputs.user_net_devices.empty() && !inputs.pattern.empty()) {
    log_line(LogLevel::kWarn, rank_,
             label() + ": both UCX_NET_DEVICES='" + inputs.user_net_devices +
                 "' and DOMINO_SOCKET_IFNAME='" + inputs.pattern +
                 "' are set; UCX uses UCX_NET_DEVICES. Unset one of them.");
  }
  std::string mine = topology::join_names(choice.interfaces, ",");
  {
    std::lock_guard<std::mutex> lock(first_choice_mutex);
    if (!first_choice) {
      first_choice = FirstInterfaceChoice{mine, choice.rule, label()};
    } else if (first_choice->interfaces != mine) {
      auto named = [](const std::string& interfaces) {
        return interfaces.empty() ? std::string("every device UCX finds") : "'" + interfaces + "'";
      };
      const std::string clash =
          label() + ": this group's rule gives UCX " + named(mine) + " (" + choice.rule +
          "), but UCX takes its network devices once per process, and this process's first "
          "domino group, " +
          first_choice->group + ", gave it " + named(first_choice->interfaces) + " (" +
          first_choice->rule + ")";
      // The user's explicit choice cannot take effect: fail rather than use other interfaces.
      TORCH_CHECK_VALUE(!choice.by_user, "domino: init of ", clash,
                        ". Set DOMINO_SOCKET_IFNAME (or UCX_NET_DEVICES) before the process's "
                        "first init_process_group and keep it for its later groups.");
      log_line(LogLevel::kWarn, rank_,
               clash + "; this group uses the first one's. Set DOMINO_SOCKET_IFNAME to choose.");
      mine = first_choice->interfaces;
      choice.rule = first_choice->rule;
    }
  }
  socket_interfaces_ = mine;
  network_rule_ = choice.rule;
  std::string devices;
  if (!inputs.user_net_devices.empty()) {
    ucx_net_devices_ = inputs.user_net_devices;
    devices = "'" + ucx_net_devices_ + "', as the user's UCX_NET_DEVICES names them";
  } else if (mine.empty()) {
    ucx_net_devices_.clear();
    devices = "every one UCX finds, since " + choice.rule + "; set DOMINO_SOCKET_IFNAME to choose";
  } else {
    const std::vector<std::string> rdma = ucx::active_rdma_ports();
    ucx_net_devices_ = ucx::net_devices_value(mine, rdma);
    devices = ucx_net_devices_ + " (" + choice.rule +
              (rdma.empty() ? "" : "; RDMA ports " + topology::join_names(rdma) + " kept") + ")";
  }
  log_line(LogLevel::kInfo, rank_, label() + ": UCX's network devices: " + devices);
}

}  // namespace domino
