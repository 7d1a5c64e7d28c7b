// DOMINO_SOCKET_IFNAME's lists (NCCL_SOCKET_IFNAME's syntax) against given interfaces, the rule
// that chooses what UCX may use, and what UCX is then given: the interfaces plus RDMA ports.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "plugins/common/TransportError.h"
#include "plugins/ucx/UcxNetDevices.h"
#include "plugins/ucx/UcxWorker.h"
#include "support/FileBootstrap.h"
#include "support/ForkRanks.h"
#include "topology/NetworkInterfaces.h"

namespace domino::topology {
namespace {

const std::vector<std::string> kHere = {"lo", "eth0", "eth1", "ib0", "docker0", "ens5"};

std::vector<std::string> select(const std::string& value) {
  return select_interfaces(parse_interface_pattern(value), kHere);
}

TEST(InterfacePattern, PrefixesSelectEveryInterfaceThatStartsWithOne) {
  EXPECT_EQ(select("eth"), (std::vector<std::string>{"eth0", "eth1"}));
  EXPECT_EQ(select("eth,ib"), (std::vector<std::string>{"eth0", "eth1", "ib0"}));
  EXPECT_EQ(select("eth1"), (std::vector<std::string>{"eth1"}));
  EXPECT_EQ(select("e"), (std::vector<std::string>{"eth0", "eth1", "ens5"}));
  EXPECT_TRUE(select("wlan").empty());
}

TEST(InterfacePattern, ACaretExcludesTheWholeList) {
  EXPECT_EQ(select("^docker,lo"), (std::vector<std::string>{"eth0", "eth1", "ib0", "ens5"}));
  EXPECT_EQ(select("^eth"), (std::vector<std::string>{"lo", "ib0", "docker0", "ens5"}));
}

TEST(InterfacePattern, AnEqualsSignMatchesWholeNamesOnly) {
  EXPECT_TRUE(select("=eth").empty());
  EXPECT_EQ(select("=eth1,ib0"), (std::vector<std::string>{"eth1", "ib0"}));
  EXPECT_EQ(select("^=eth0"), (std::vector<std::string>{"lo", "eth1", "ib0", "docker0", "ens5"}));
}

TEST(InterfacePattern, EmptyEntriesAreSkippedAndAListOfNothingIsRefused) {
  EXPECT_EQ(select("eth0,,ib"), (std::vector<std::string>{"eth0", "ib0"}));
  for (const char* nothing : {"", "^", "=", "^=", ",", "^,"}) {
    EXPECT_THROW(parse_interface_pattern(nothing), std::invalid_argument) << nothing;
  }
}

// Two hosts' worth of interfaces: loopback, a link to the store, one that is down.
const std::vector<NetworkInterface> kInterfaces = {
    {"lo", {"127.0.0.1", "::1"}, true, true},
    {"dveth0", {"10.77.1.2"}, true, false},
    {"eth1", {"192.168.5.2"}, true, false},
    {"ifb0", {}, false, false},
};

std::string toward_store(const std::string& host, uint16_t, std::string* why) {
  if (host == "store.example") return "10.77.1.2";
  if (host == "this-host.example" || host == "127.0.0.1") return "127.0.0.1";
  if (host == "10.77.1.1") return "10.77.1.2";           // another host's address
  if (host == "elsewhere.example") return "172.16.0.9";  // on no interface here
  *why = "'" + host + "' does not resolve";
  return "";
}

InterfaceChoice choose(const InterfaceInputs& inputs) {
  return choose_interfaces(inputs, kInterfaces, toward_store);
}

TEST(InterfaceChoice, ByDefaultTheInterfaceHoldingTheAddressTowardTheStore) {
  const InterfaceChoice choice = choose({.store_host = "store.example", .store_port = 29500});
  EXPECT_EQ(choice.interfaces, (std::vector<std::string>{"dveth0"}));
  EXPECT_FALSE(choice.by_user);
  EXPECT_NE(choice.rule.find("dveth0 holds 10.77.1.2"), std::string::npos) << choice.rule;
  EXPECT_NE(choice.rule.find("store at store.example"), std::string::npos) << choice.rule;
}

TEST(InterfaceChoice, TheUsersListComesBeforeTheStoreAndUcxNetDevicesBeforeBoth) {
  InterfaceInputs inputs{.pattern = "eth,lo", .store_host = "store.example"};
  InterfaceChoice choice = choose(inputs);
  EXPECT_EQ(choice.interfaces, (std::vector<std::string>{"lo", "eth1"}));
  EXPECT_TRUE(choice.by_user);
  EXPECT_NE(choice.rule.find("DOMINO_SOCKET_IFNAME='eth,lo'"), std::string::npos) << choice.rule;

  inputs.user_net_devices = "mlx5_0:1";
  choice = choose(inputs);
  EXPECT_TRUE(choice.interfaces.empty());
  EXPECT_TRUE(choice.by_user);
  EXPECT_NE(choice.rule.find("UCX_NET_DEVICES='mlx5_0:1'"), std::string::npos) << choice.rule;
}

TEST(InterfaceChoice, AListThatSelectsNothingUsableNamesTheValueAndTheInterfaces) {
  for (const char* value : {"nosuch0", "ifb", "^lo,dveth,eth"}) {
    try {
      choose({.pattern = value});
      ADD_FAILURE() << value << " selected something";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(std::string("DOMINO_SOCKET_IFNAME='") + value + "'"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("(lo, dveth0, eth1)"), std::string::npos) << message;
      EXPECT_NE(message.find("down or without an address: ifb0"), std::string::npos) << message;
    }
  }
}

TEST(InterfaceChoice, WithoutAStoreHostRailAlignmentThenTheTransportsOwnChoice) {
  const std::string file_store = "the job's store is a c10d::FileStore";
  InterfaceChoice choice = choose({.store_kind = file_store, .rail_interface = "eth1"});
  EXPECT_EQ(choice.interfaces, (std::vector<std::string>{"eth1"}));
  EXPECT_NE(choice.rule.find("rail alignment"), std::string::npos) << choice.rule;
  EXPECT_NE(choice.rule.find(file_store), std::string::npos) << choice.rule;

  choice = choose({.store_kind = file_store, .rail_interface = "ifb0"});  // down: not usable
  EXPECT_TRUE(choice.interfaces.empty());
  EXPECT_EQ(choice.rule, file_store);

  // A store host that does not resolve, or whose route leaves through no interface of ours.
  choice = choose({.store_host = "nowhere.example"});
  EXPECT_TRUE(choice.interfaces.empty());
  EXPECT_NE(choice.rule.find("does not resolve"), std::string::npos) << choice.rule;
  choice = choose({.store_host = "elsewhere.example"});
  EXPECT_TRUE(choice.interfaces.empty());
  EXPECT_NE(choice.rule.find("172.16.0.9, is on no interface"), std::string::npos) << choice.rule;
}

// A store on this host is reached through loopback, which says nothing about the network: the
// route toward another host's address decides, and without one the transport keeps its own.
TEST(InterfaceChoice, OnTheStoresOwnHostTheRouteTowardAnotherHostDecidesNeverLoopback) {
  InterfaceChoice choice =
      choose({.store_host = "this-host.example", .peer_addresses = {"127.0.0.1", "10.77.1.1"}});
  EXPECT_EQ(choice.interfaces, (std::vector<std::string>{"dveth0"}));
  EXPECT_NE(choice.rule.find("dveth0 holds 10.77.1.2, this host's address toward another host of "
                             "the group at 10.77.1.1 (the job's store at this-host.example is "
                             "this host (127.0.0.1 on lo))"),
            std::string::npos)
      << choice.rule;

  choice = choose({.store_host = "this-host.example"});
  EXPECT_TRUE(choice.interfaces.empty());
  EXPECT_NE(choice.rule.find("is this host (127.0.0.1 on lo)"), std::string::npos) << choice.rule;

  std::string why;
  ASSERT_EQ(local_address_toward("127.0.0.1", 29500, &why), "127.0.0.1") << why;
  const std::vector<NetworkInterface> here = local_interfaces();
  EXPECT_EQ(network_address_toward("127.0.0.1", 29500, here), "");
  choice = choose_interfaces({.store_host = "127.0.0.1"}, here);
  EXPECT_TRUE(choice.interfaces.empty()) << choice.rule;
}

TEST(UcxNetDevices, ActiveRdmaPortsAreKeptBesideTheInterfaces) {
  const std::string sysfs = testing::make_temp_directory();
  auto port = [&](const std::string& device, const std::string& number, const char* state) {
    const std::string dir = sysfs + "/" + device + "/ports/" + number;
    for (const std::string& d : {sysfs + "/" + device, sysfs + "/" + device + "/ports", dir}) {
      mkdir(d.c_str(), 0700);
    }
    std::ofstream(dir + "/state") << state << "\n";
  };
  port("mlx5_1", "1", "4: ACTIVE");
  port("mlx5_0", "1", "4: ACTIVE");
  port("mlx5_0", "2", "1: DOWN");
  const std::vector<std::string> ports = ucx::active_rdma_ports(sysfs);
  EXPECT_EQ(ports, (std::vector<std::string>{"mlx5_0:1", "mlx5_1:1"}));
  EXPECT_EQ(ucx::net_devices_value("eth0,eth1", ports), "eth0,eth1,mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(ucx::net_devices_value("eth0", {}), "eth0");
  EXPECT_TRUE(ucx::active_rdma_ports(sysfs + "/absent").empty());
  std::filesystem::remove_all(sysfs);
}

// In a child process of its own: the process's one UCX worker outlives the test.
TEST(UcxNetDevices, TheWorkerKeepsItsFirstInterfacesAndRefusesOthers) {
  const auto outcomes = domino::testing::fork_ranks(1, [](int) -> std::string {
    unsetenv("UCX_NET_DEVICES");
    ucx::UcxWorker& worker = ucx::UcxWorker::instance("lo");
    const std::string expected = ucx::net_devices_value("lo", ucx::active_rdma_ports());
    if (worker.net_devices() != expected) return "NET_DEVICES '" + worker.net_devices() + "'";
    if (&ucx::UcxWorker::instance("lo") != &worker || &ucx::UcxWorker::instance() != &worker) {
      return "a second worker";
    }
    try {
      ucx::UcxWorker::instance("eth0");
      return "eth0 was accepted after lo";
    } catch (const TransportError& e) {
      const std::string message = e.what();
      const bool named = message.find("'eth0'") != std::string::npos &&
                         message.find("NET_DEVICES '" + expected + "'") != std::string::npos;
      return e.status() == DOMINO_ERR_INVALID && named ? "" : "wrong refusal: " + message;
    }
  });
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].exit_code, 0) << outcomes[0].message;
  EXPECT_EQ(outcomes[0].message, "");
}

}  // namespace
}  // namespace domino::topology
