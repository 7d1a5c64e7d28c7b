#include "NetworkInterfaces.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace domino::topology {

namespace {
// getnameinfo's numeric form, as for getifaddrs' addresses, so the two compare as text (an
// IPv6 link-local address carries its "%interface" scope in both).
std::string numeric_address(const sockaddr* address, socklen_t length) {
  char text[NI_MAXHOST] = {0};
  if (getnameinfo(address, length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) return "";
  return text;
}

socklen_t address_length(const sockaddr* address) {
  return address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

const NetworkInterface* holding(const std::vector<NetworkInterface>& here,
                                const std::string& address) {
  for (const NetworkInterface& i : here) {
    if (std::find(i.addresses.begin(), i.addresses.end(), address) != i.addresses.end()) return &i;
  }
  return nullptr;
}

std::string no_match_message(const std::string& pattern, const std::vector<NetworkInterface>& here,
                             const std::vector<std::string>& usable) {
  std::vector<std::string> others;
  for (const NetworkInterface& i : here) {
    if (!i.usable) others.push_back(i.name);
  }
  return "DOMINO_SOCKET_IFNAME='" + pattern +
         "' selects none of this host's network interfaces that are up with an IP address (" +
         (usable.empty() ? std::string("there are none") : join_names(usable)) + ")" +
         (others.empty() ? "" : "; down or without an address: " + join_names(others)) +
         ". Name interfaces that are up (a prefix such as 'eth' selects eth0, eth1, ...; a "
         "leading '^' selects all but the names that follow; a leading '=' matches names "
         "exactly), or unset it to use the interface that reaches the job's store";
}
}  // namespace

InterfacePattern parse_interface_pattern(const std::string& value) {
  InterfacePattern pattern;
  size_t at = 0;
  if (at < value.size() && value[at] == '^') {
    pattern.exclude = true;
    ++at;
  }
  if (at < value.size() && value[at] == '=') {
    pattern.exact = true;
    ++at;
  }
  while (at <= value.size()) {
    const size_t comma = std::min(value.find(',', at), value.size());
    if (comma > at) pattern.names.push_back(value.substr(at, comma - at));
    at = comma + 1;
  }
  if (pattern.names.empty()) {
    throw std::invalid_argument(
        "a comma-separated list of interface names or prefixes (e.g. `eth0`, `eth,ib`), "
        "optionally after '^' (all but those) and '=' (exact names)");
  }
  return pattern;
}

bool interface_matches(const InterfacePattern& pattern, const std::string& interface) {
  const bool listed =
      std::any_of(pattern.names.begin(), pattern.names.end(), [&](const std::string& name) {
        return pattern.exact ? interface == name : interface.compare(0, name.size(), name) == 0;
      });
  return listed != pattern.exclude;
}

std::vector<std::string> select_interfaces(const InterfacePattern& pattern,
                                           const std::vector<std::string>& available) {
  std::vector<std::string> selected;
  for (const std::string& name : available) {
    if (interface_matches(pattern, name)) selected.push_back(name);
  }
  return selected;
}

std::vector<NetworkInterface> local_interfaces() {
  std::vector<NetworkInterface> found;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return found;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    // An IPv4 alias is labelled "eth0:1"; the device, which UCX knows, is eth0.
    const std::string name =
        std::string(entry->ifa_name).substr(0, std::strcspn(entry->ifa_name, ":"));
    auto known = std::find_if(found.begin(), found.end(),
                              [&](const NetworkInterface& i) { return i.name == name; });
    if (known == found.end()) known = found.insert(found.end(), {name, {}, false, false});
    known->loopback = known->loopback || (entry->ifa_flags & IFF_LOOPBACK) != 0;
    const sockaddr* address = entry->ifa_addr;
    if (address == nullptr || (address->sa_family != AF_INET && address->sa_family != AF_INET6)) {
      continue;
    }
    const std::string text = numeric_address(address, address_length(address));
    if (text.empty()) continue;
    known->addresses.push_back(text);
    known->usable = known->usable ||
                    ((entry->ifa_flags & IFF_UP) != 0 && (entry->ifa_flags & IFF_RUNNING) != 0);
  }
  freeifaddrs(list);
  return found;
}

std::string local_address_toward(const std::string& host, uint16_t port, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* resolved = nullptr;
  const std::string service = std::to_string(port == 0 ? 9 : port);
  if (const int status = getaddrinfo(host.c_str(), service.c_str(), &hints, &resolved);
      status != 0) {
    *why = "'" + host + "' does not resolve (" + gai_strerror(status) + ")";
    return "";
  }
  std::string address;
  *why = "no route from this host leads to '" + host + "'";
  for (const addrinfo* a = resolved; a != nullptr && address.empty(); a = a->ai_next) {
    const int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
      address = numeric_address(reinterpret_cast<const sockaddr*>(&local), length);
    } else {
      *why += std::string(" (") + std::strerror(errno) + ")";
    }
    close(fd);
  }
  freeaddrinfo(resolved);
  return address;
}

std::string network_address_toward(const std::string& host, uint16_t port,
                                   const std::vector<NetworkInterface>& here) {
  std::string why;
  const std::string address = local_address_toward(host, port, &why);
  const NetworkInterface* route = address.empty() ? nullptr : holding(here, address);
  return route != nullptr && !route->loopback ? address : "";
}

std::string join_names(const std::vector<std::string>& names, const char* separator) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : separator) + name;
  return text;
}

InterfaceChoice choose_interfaces(
    const InterfaceInputs& inputs, const std::vector<NetworkInterface>& here,
    const std::function<std::string(const std::string&, uint16_t, std::string*)>& toward) {
  std::vector<std::string> usable;
  for (const NetworkInterface& i : here) {
    if (i.usable) usable.push_back(i.name);
  }
  if (!inputs.user_net_devices.empty()) {
    return {{},
            "UCX_NET_DEVICES='" + inputs.user_net_devices + "' is set: the user's own choice",
            true};
  }
  if (!inputs.pattern.empty()) {
    const std::vector<std::string> selected =
        select_interfaces(parse_interface_pattern(inputs.pattern), usable);
    if (selected.empty()) {
      throw std::invalid_argument(no_match_message(inputs.pattern, here, usable));
    }
    return {selected, "DOMINO_SOCKET_IFNAME='" + inputs.pattern + "' selects them", true};
  }
  std::string why = inputs.store_kind;
  if (!inputs.store_host.empty()) {
    std::string unreachable;
    const std::string address = toward(inputs.store_host, inputs.store_port, &unreachable);
    const NetworkInterface* route = address.empty() ? nullptr : holding(here, address);
    if (address.empty()) why = "the job's store at " + inputs.store_host + ": " + unreachable;
    if (route != nullptr && !route->loopback) {
      return {{route->name},
              route->name + " holds " + address +
                  ", this host's address toward the job's store at " + inputs.store_host,
              false};
    }
    if (route != nullptr) {
      why = "the job's store at " + inputs.store_host + " is this host (" + address + " on " +
            route->name + ")";
    } else if (!address.empty()) {
      why = "this host's address toward the job's store at " + inputs.store_host + ", " + address +
            ", is on no interface";
    }
    for (const std::string& peer : inputs.peer_addresses) {
      std::string no_route;
      const std::string mine = toward(peer, inputs.store_port, &no_route);
      const NetworkInterface* to_peer = mine.empty() ? nullptr : holding(here, mine);
      if (to_peer != nullptr && !to_peer->loopback) {
        return {{to_peer->name},
                to_peer->name + " holds " + mine +
                    ", this host's address toward another host of the group at " + peer + " (" +
                    why + ")",
                false};
      }
    }
  }
  if (!inputs.rail_interface.empty() &&
      std::find(usable.begin(), usable.end(), inputs.rail_interface) != usable.end()) {
    return {{inputs.rail_interface},
            "rail alignment: " + inputs.rail_interface +
                " is the NIC next to this rank's NUMA node (" + why + ")",
            false};
  }
  return {{}, why, false};
}

}  // namespace domino::topology
