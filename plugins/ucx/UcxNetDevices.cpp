#include "UcxNetDevices.h"

#include <algorithm>
#include <fstream>

#include "plugins/common/Directory.h"

namespace domino::ucx {

std::vector<std::string> active_rdma_ports(const std::string& infiniband_dir) {
  std::vector<std::string> ports;
  for (const std::string& device : directory_entries(infiniband_dir)) {
    const std::string device_ports = infiniband_dir + "/" + device + "/ports";
    for (const std::string& port : directory_entries(device_ports)) {
      // "4: ACTIVE"; a port UCX cannot use would only make it warn that the device is missing.
      std::ifstream state_file(device_ports + "/" + port + "/state");
      std::string state;
      std::getline(state_file, state);
      if (state.find("ACTIVE") != std::string::npos) ports.push_back(device + ":" + port);
    }
  }
  std::sort(ports.begin(), ports.end());
  return ports;
}

std::string net_devices_value(const std::string& interfaces,
                              const std::vector<std::string>& rdma_ports) {
  std::string value = interfaces;
  for (const std::string& port : rdma_ports) value += (value.empty() ? "" : ",") + port;
  return value;
}

}  // namespace domino::ucx
