// Which network interfaces a rank's traffic between hosts may use: DOMINO_SOCKET_IFNAME's lists
// (NCCL_SOCKET_IFNAME's syntax), this host's interfaces, and the one through which this host
// reaches another (the job's store). Torch-free: the backend finds the store's host, and the
// transports get the result through the plugin ABI.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace domino::topology {

// A parsed DOMINO_SOCKET_IFNAME: "eth,ib" (name prefixes), "^docker,lo" (every interface but
// those), "=eth0" (exact names); "^=" excludes exact names.
struct InterfacePattern {
  std::vector<std::string> names;
  bool exclude = false;
  bool exact = false;
};

// Throws std::invalid_argument, saying what is accepted, for a list that names nothing.
InterfacePattern parse_interface_pattern(const std::string& value);
bool interface_matches(const InterfacePattern& pattern, const std::string& interface);
// The interfaces of available that pattern selects, in available's order.
std::vector<std::string> select_interfaces(const InterfacePattern& pattern,
                                           const std::vector<std::string>& available);

struct NetworkInterface {
  std::string name;
  std::vector<std::string> addresses;  // numeric IPv4 and IPv6 addresses
  // Up and running with an IP address: what a socket transport (UCX's TCP) can use.
  bool usable = false;
  bool loopback = false;
};

// This host's interfaces (getifaddrs), in the kernel's order; empty when they cannot be read.
std::vector<NetworkInterface> local_interfaces();

// The numeric address this host sends from toward host (a name or an address) by the kernel's
// routes: a UDP socket connected to it, which sends nothing. "" with the reason in *why when
// the name does not resolve or no route leads there.
std::string local_address_toward(const std::string& host, uint16_t port, std::string* why);

// The address this host sends from toward host when it is on an interface of here that is not
// loopback; "" otherwise (host is a loopback address of this one, or cannot be reached).
std::string network_address_toward(const std::string& host, uint16_t port,
                                   const std::vector<NetworkInterface>& here);

// "a, b, c".
std::string join_names(const std::vector<std::string>& names, const char* separator = ", ");

// What this rank's inter-host traffic may use, and the rule that decided it.
struct InterfaceChoice {
  std::vector<std::string> interfaces;  // empty: the transport keeps its own choice
  std::string rule;                     // why, for the log
  bool by_user = false;                 // DOMINO_SOCKET_IFNAME or UCX_NET_DEVICES decided
};

struct InterfaceInputs {
  std::string pattern;           // DOMINO_SOCKET_IFNAME; "" when unset
  std::string user_net_devices;  // UCX_NET_DEVICES; "" when unset
  std::string store_host;        // the host of the job's store; "" when it names none
  uint16_t store_port = 0;
  std::string store_kind;  // why there is no store host, for the log
  // Other hosts' addresses toward the store, for a host whose own route to it is loopback (the
  // store is on this host, so its route says nothing about the network).
  std::vector<std::string> peer_addresses;
  std::string rail_interface;  // rail alignment's interface; "" where it does not apply
};

// The first rule that applies: the user's UCX_NET_DEVICES (nothing handed down), the interfaces
// DOMINO_SOCKET_IFNAME selects, the interface holding this host's address toward the store
// (found through toward) or, where that is loopback, toward a peer, rail alignment's interface,
// else the transport's own choice. Never loopback alone by default. Throws
// std::invalid_argument naming DOMINO_SOCKET_IFNAME, its value and here's interfaces when the
// pattern selects none of those that are usable.
InterfaceChoice choose_interfaces(
    const InterfaceInputs& inputs, const std::vector<NetworkInterface>& here,
    const std::function<std::string(const std::string& host, uint16_t port, std::string* why)>&
        toward = local_address_toward);

}  // namespace domino::topology
