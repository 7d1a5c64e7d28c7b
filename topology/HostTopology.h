// What one host looks like, from hwloc: packages, NUMA nodes and cores; GPUs and NICs with the
// NUMA node each hangs off and, for each GPU, the NIC behind the same PCIe switch (rail
// alignment). Live detection, or an hwloc XML file (DOMINO_TOPO_FILE). Torch-free.
#pragma once

#include <string>
#include <vector>

namespace domino::topology {

struct NumaNode {
  int os_index = 0;
  std::vector<int> cpus;  // OS indexes of its processing units
  unsigned long long memory_bytes = 0;
};

struct Device {
  std::string name;         // OS name: nvml0, cuda0, mlx5_0, eth0, ...
  std::string pci_busid;    // empty when not a PCI device
  int numa = -1;            // OS index of the closest NUMA node, -1 if unknown
  std::string closest_nic;  // GPUs only: the NIC sharing the deepest PCIe ancestor
};

struct HostTopology {
  std::string source;  // "live" or the XML path
  int packages = 0;
  int cores = 0;
  int processing_units = 0;
  std::vector<NumaNode> numa_nodes;
  std::vector<Device> gpus;
  std::vector<Device> nics;

  // The NUMA node whose CPUs contain cpu, or -1.
  int numa_of_cpu(int cpu) const;
  // The NIC closest to NUMA node numa (first on that node, else the first), or "".
  std::string nic_for_numa(int numa) const;
};

// Throws std::runtime_error naming the file and hwloc's complaint when it cannot load.
HostTopology load_host_topology(const std::string& xml_path = "");

}  // namespace domino::topology
