#include "Binding.h"

#include <algorithm>

namespace domino::topology {

Binding choose_binding(const HostTopology& host, int local_rank, int local_size,
                       const std::vector<int>& allowed_cpus) {
  Binding binding;
  binding.cpus = allowed_cpus;
  if (host.numa_nodes.empty()) {
    binding.nic = host.nic_for_numa(-1);
    return binding;
  }
  const size_t nodes = host.numa_nodes.size();
  const size_t index =
      local_size > 0 ? static_cast<size_t>(local_rank) * nodes / static_cast<size_t>(local_size)
                     : 0;
  const NumaNode& node = host.numa_nodes[std::min(index, nodes - 1)];
  binding.numa = node.os_index;
  std::vector<int> mine;
  for (int cpu : node.cpus) {
    if (std::find(allowed_cpus.begin(), allowed_cpus.end(), cpu) != allowed_cpus.end()) {
      mine.push_back(cpu);
    }
  }
  if (!mine.empty()) binding.cpus = mine;
  binding.nic = host.nic_for_numa(binding.numa);
  return binding;
}

}  // namespace domino::topology
