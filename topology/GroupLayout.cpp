#include "GroupLayout.h"

#include <unistd.h>

#include <fstream>

namespace domino::topology {

GroupLayout layout_from_host_ids(const std::vector<std::string>& host_ids) {
  GroupLayout layout;
  for (size_t r = 0; r < host_ids.size(); ++r) {
    int host = -1;
    for (size_t h = 0; h < layout.hosts.size(); ++h) {
      if (layout.hosts[h] == host_ids[r]) host = static_cast<int>(h);
    }
    if (host < 0) {
      host = static_cast<int>(layout.hosts.size());
      layout.hosts.push_back(host_ids[r]);
      layout.host_ranks.emplace_back();
    }
    layout.local_rank.push_back(static_cast<int>(layout.host_ranks[host].size()));
    layout.host_ranks[host].push_back(static_cast<int>(r));
    layout.host_of_rank.push_back(host);
  }
  for (const auto& ranks : layout.host_ranks) {
    layout.uniform = layout.uniform && ranks.size() == layout.host_ranks.front().size();
  }
  return layout;
}

std::string local_host_id(const std::string& override_id) {
  if (!override_id.empty()) return override_id;
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  // Network namespaces share hostname and boot id but not abstract Unix sockets, which the
  // shared-memory handoff uses: ranks in different namespaces are on different hosts for us.
  char net[64] = {0};
  const ssize_t net_length = readlink("/proc/self/ns/net", net, sizeof net - 1);
  return std::string(name) + (boot_id.empty() ? "" : "/" + boot_id) +
         (net_length > 0 ? "/" + std::string(net, static_cast<size_t>(net_length)) : "");
}

}  // namespace domino::topology
