#include <gtest/gtest.h>

#include <stdexcept>

#include "topology/Binding.h"
#include "topology/GroupLayout.h"
#include "topology/HostTopology.h"

namespace domino::topology {
namespace {

std::string fixture(const char* name) {
  return std::string(DOMINO_TEST_FIXTURE_DIR) + "/" + name;
}

TEST(HostTopology, ThisMachineFixture) {
  const HostTopology host = load_host_topology(fixture("this-machine.xml"));
  EXPECT_EQ(host.packages, 1);
  EXPECT_EQ(host.cores, 2);
  EXPECT_EQ(host.processing_units, 2);
  ASSERT_EQ(host.numa_nodes.size(), 1u);
  EXPECT_EQ(host.numa_nodes[0].cpus, (std::vector<int>{0, 1}));
  EXPECT_TRUE(host.gpus.empty());
  ASSERT_EQ(host.nics.size(), 1u);
  EXPECT_EQ(host.nics[0].name, "eth0");
  EXPECT_EQ(host.nics[0].pci_busid, "0000:00:03.0");
  EXPECT_EQ(host.nics[0].numa, 0);
}

TEST(HostTopology, TwoSocketServerFixture) {
  const HostTopology host = load_host_topology(fixture("two-socket-server.xml"));
  EXPECT_EQ(host.packages, 2);
  EXPECT_EQ(host.cores, 16);
  EXPECT_EQ(host.processing_units, 32);
  ASSERT_EQ(host.numa_nodes.size(), 2u);
  EXPECT_EQ(host.numa_nodes[1].cpus.size(), 16u);
  EXPECT_EQ(host.numa_of_cpu(0), 0);
  EXPECT_EQ(host.numa_of_cpu(31), 1);
  EXPECT_EQ(host.numa_of_cpu(99), -1);
  EXPECT_EQ(host.nic_for_numa(0), "");
}

TEST(HostTopology, DgxLikeFixtureAlignsEachGpuWithItsSwitchNic) {
  const HostTopology host = load_host_topology(fixture("dgx-like.xml"));
  ASSERT_EQ(host.gpus.size(), 8u);
  EXPECT_EQ(host.nics.size(), 8u);  // mlx5_N and its ibN twin per card
  const char* expected[] = {"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1",
                            "mlx5_2", "mlx5_2", "mlx5_3", "mlx5_3"};
  for (size_t g = 0; g < 8; ++g) {
    EXPECT_EQ(host.gpus[g].name, "nvml" + std::to_string(g));
    EXPECT_EQ(host.gpus[g].closest_nic, expected[g]) << host.gpus[g].name;
    EXPECT_EQ(host.gpus[g].numa, g < 4 ? 0 : 1) << host.gpus[g].name;
  }
  EXPECT_EQ(host.nic_for_numa(1), "mlx5_2");
}

TEST(HostTopology, LiveDetectionWorks) {
  const HostTopology host = load_host_topology();
  EXPECT_EQ(host.source, "live");
  EXPECT_GE(host.processing_units, 1);
  EXPECT_GE(host.numa_nodes.size(), 1u);
}

TEST(HostTopology, AnUnreadableFileIsNamed) {
  try {
    load_host_topology("/nonexistent/topology.xml");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/topology.xml"), std::string::npos);
  }
}

TEST(GroupLayout, TwoHostsOfTwo) {
  const GroupLayout l = layout_from_host_ids({"a", "a", "b", "b"});
  EXPECT_EQ(l.hosts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(l.local_rank, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(l.local_size(3), 2);
  EXPECT_TRUE(l.uniform);
  EXPECT_FALSE(l.single_host());
}

TEST(GroupLayout, InterleavedRanks) {
  const GroupLayout l = layout_from_host_ids({"a", "b", "a", "b"});
  EXPECT_EQ(l.host_ranks, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(l.local_rank, (std::vector<int>{0, 0, 1, 1}));
}

TEST(GroupLayout, NonUniformTwoPlusOne) {
  const GroupLayout l = layout_from_host_ids({"a", "a", "b"});
  EXPECT_FALSE(l.uniform);
  EXPECT_EQ(l.local_size(0), 2);
  EXPECT_EQ(l.local_size(2), 1);
}

TEST(GroupLayout, HostIdentityOverrideWins) {
  EXPECT_EQ(local_host_id("node-7"), "node-7");
  EXPECT_FALSE(local_host_id("").empty());
}

}  // namespace
}  // namespace domino::topology

namespace domino::topology {
namespace {

std::vector<int> all_cpus(int n) {
  std::vector<int> cpus(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) cpus[static_cast<size_t>(i)] = i;
  return cpus;
}

TEST(Binding, RanksOfATwoSocketServerSpreadOverItsNodesInOrder) {
  const HostTopology host = load_host_topology(fixture("two-socket-server.xml"));
  for (int local = 0; local < 4; ++local) {
    const Binding b = choose_binding(host, local, 4, all_cpus(32));
    EXPECT_EQ(b.numa, local < 2 ? 0 : 1) << "local rank " << local;
    ASSERT_EQ(b.cpus.size(), 16u);
    EXPECT_EQ(host.numa_of_cpu(b.cpus.front()), b.numa);
  }
  // A process confined to node 0's first CPUs keeps to them even where node 1 is its share.
  const Binding confined = choose_binding(host, 3, 4, {0, 1});
  EXPECT_EQ(confined.cpus, (std::vector<int>{0, 1}));
}

TEST(Binding, EachRankGetsTheNicOfItsNode) {
  const HostTopology host = load_host_topology(fixture("dgx-like.xml"));
  EXPECT_EQ(choose_binding(host, 0, 8, all_cpus(host.processing_units)).nic, "mlx5_0");
  EXPECT_EQ(choose_binding(host, 7, 8, all_cpus(host.processing_units)).nic, "mlx5_2");
}

TEST(Binding, ThisMachineKeepsEveryAllowedCpu) {
  const HostTopology host = load_host_topology(fixture("this-machine.xml"));
  const Binding b = choose_binding(host, 1, 4, all_cpus(host.processing_units));
  EXPECT_EQ(b.cpus.size(), static_cast<size_t>(host.processing_units));
}

}  // namespace
}  // namespace domino::topology
