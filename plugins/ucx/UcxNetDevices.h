// What UCX's NET_DEVICES becomes when the backend names the socket interfaces a rank may use:
// those, plus every active RDMA port. UCX_NET_DEVICES restricts all of UCX's network devices,
// and interface names do not cover the RDMA ones (UCX names them "mlx5_0:1"), which would
// otherwise be dropped. Shared-memory and loopback transports are not network devices
// (UCX_SHM_DEVICES, UCX_SELF_DEVICES) and stay as they are.
#pragma once

#include <string>
#include <vector>

namespace domino::ucx {

// "<device>:<port>" for each port under infiniband_dir (sysfs) whose state is ACTIVE, sorted;
// empty on a host without RDMA devices.
std::vector<std::string> active_rdma_ports(
    const std::string& infiniband_dir = "/sys/class/infiniband");

// The NET_DEVICES value: interfaces (comma-separated), then rdma_ports.
std::string net_devices_value(const std::string& interfaces,
                              const std::vector<std::string>& rdma_ports);

}  // namespace domino::ucx
