// Where one rank's communication should live on its host: the NUMA node it gets (ranks of a
// host spread over the nodes in order of local rank), the CPUs its progress threads run on
// (that node's, within what the process may use), and the NIC closest to that node for
// inter-host traffic (rail alignment). Torch-free.
#pragma once

#include <string>
#include <vector>

#include "HostTopology.h"

namespace domino::topology {

struct Binding {
  int numa = -1;          // OS index, -1 when the host reports no NUMA node
  std::vector<int> cpus;  // progress threads' CPUs; empty: leave them as they are
  std::string nic;        // closest NIC, "" when the host has none
};

// allowed_cpus: the process's affinity. A node with none of them falls back to all of them.
Binding choose_binding(const HostTopology& host, int local_rank, int local_size,
                       const std::vector<int>& allowed_cpus);

}  // namespace domino::topology
