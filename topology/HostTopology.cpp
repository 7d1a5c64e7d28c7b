#include "HostTopology.h"

#include <hwloc.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace domino::topology {

namespace {
struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

bool is_gpu(hwloc_obj_t osdev) {
  return osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU ||
         osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC;
}

bool is_nic(hwloc_obj_t osdev) {
  return osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ||
         osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
}

hwloc_obj_t pci_parent(hwloc_obj_t osdev) {
  return osdev->parent != nullptr && osdev->parent->type == HWLOC_OBJ_PCI_DEVICE ? osdev->parent
                                                                                 : nullptr;
}

std::string busid(hwloc_obj_t pci) {
  if (pci == nullptr) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return text;
}

int numa_of(hwloc_topology_t topology, hwloc_obj_t obj) {
  hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topology, obj);
  if (anchor == nullptr || anchor->nodeset == nullptr) return -1;
  return hwloc_bitmap_first(anchor->nodeset);
}

int depth_of(hwloc_obj_t obj) {
  int depth = 0;
  for (; obj != nullptr; obj = obj->parent) ++depth;
  return depth;
}

hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b) {
  int da = depth_of(a), db = depth_of(b);
  while (da > db) a = a->parent, --da;
  while (db > da) b = b->parent, --db;
  while (a != b) a = a->parent, b = b->parent;
  return a;
}
}  // namespace

int HostTopology::numa_of_cpu(int cpu) const {
  for (const auto& node : numa_nodes) {
    for (int c : node.cpus) {
      if (c == cpu) return node.os_index;
    }
  }
  return -1;
}

std::string HostTopology::nic_for_numa(int numa) const {
  for (const auto& nic : nics) {
    if (nic.numa == numa) return nic.name;
  }
  return nics.empty() ? "" : nics.front().name;
}

HostTopology load_host_topology(const std::string& xml_path) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw std::runtime_error("hwloc_topology_init failed");
  TopologyPtr topology(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (!xml_path.empty() && hwloc_topology_set_xml(raw, xml_path.c_str()) != 0) {
    throw std::runtime_error("hwloc cannot read topology file " + xml_path + ": " +
                             std::strerror(errno) + " (check DOMINO_TOPO_FILE)");
  }
  if (hwloc_topology_load(raw) != 0) {
    throw std::runtime_error("hwloc failed to load the topology" +
                             (xml_path.empty() ? std::string() : " from " + xml_path));
  }
  HostTopology host;
  host.source = xml_path.empty() ? "live" : xml_path;
  host.packages = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PACKAGE);
  host.cores = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_CORE);
  host.processing_units = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PU);
  for (hwloc_obj_t node = hwloc_get_next_obj_by_type(raw, HWLOC_OBJ_NUMANODE, nullptr);
       node != nullptr; node = hwloc_get_next_obj_by_type(raw, HWLOC_OBJ_NUMANODE, node)) {
    NumaNode entry;
    entry.os_index = static_cast<int>(node->os_index);
    entry.memory_bytes = node->attr->numanode.local_memory;
    int cpu = -1;
    hwloc_bitmap_foreach_begin(cpu, node->cpuset) {
      entry.cpus.push_back(cpu);
    }
    hwloc_bitmap_foreach_end();
    host.numa_nodes.push_back(entry);
  }
  std::vector<hwloc_obj_t> gpu_objs, nic_objs;
  for (hwloc_obj_t osdev = hwloc_get_next_osdev(raw, nullptr); osdev != nullptr;
       osdev = hwloc_get_next_osdev(raw, osdev)) {
    Device device{osdev->name != nullptr ? osdev->name : "?", busid(pci_parent(osdev)),
                  numa_of(raw, osdev), ""};
    if (is_gpu(osdev)) {
      host.gpus.push_back(device);
      gpu_objs.push_back(osdev);
    } else if (is_nic(osdev)) {
      host.nics.push_back(device);
      nic_objs.push_back(osdev);
    }
  }
  for (size_t g = 0; g < gpu_objs.size(); ++g) {
    int best_depth = -1;
    for (size_t n = 0; n < nic_objs.size(); ++n) {
      // Prefer the OpenFabrics name over its Net twin on the same PCI function (first wins).
      const int depth = depth_of(common_ancestor(gpu_objs[g], nic_objs[n]));
      if (depth > best_depth) {
        best_depth = depth;
        host.gpus[g].closest_nic = host.nics[n].name;
      }
    }
  }
  return host;
}

}  // namespace domino::topology
