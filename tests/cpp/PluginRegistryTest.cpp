#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "plugins/common/TransportError.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginRegistry.h"
#include "support/FileBootstrap.h"

namespace domino {
namespace {

TEST(PluginRegistry, SharedMemoryIsBuiltIn) {
  PluginRegistry registry({});
  ASSERT_NE(registry.find("shm"), nullptr);
  EXPECT_EQ(registry.origin("shm"), "built-in");
  EXPECT_EQ(registry.find("echo"), nullptr);
}

TEST(PluginRegistry, LoadsAPluginLibraryFromTheSearchPath) {
  PluginRegistry registry({"/nonexistent", DOMINO_TEST_PLUGIN_DIR});
  const domino_plugin_t* echo = registry.find("echo");
  ASSERT_NE(echo, nullptr);
  EXPECT_NE(registry.origin("echo").find("libdomino-plugin-echo.so"), std::string::npos);

  testing::FileBootstrap bootstrap(testing::make_temp_directory());
  domino_comm_config_t config{};
  config.rank = 0;
  config.size = 1;
  config.group_name = "unit";
  config.bootstrap = bootstrap.table();
  Communicator comm(echo, config);
  EXPECT_STREQ(comm.transport(), "echo");
  float in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
  domino_buffer_t send{in, 3, DOMINO_FLOAT32, -1}, recv{out, 3, DOMINO_FLOAT32, -1};
  comm.collective(
      domino::make_call(domino::topology::Collective::kAllReduce, send, recv, DOMINO_SUM));
  EXPECT_EQ(out[2], 3.0f);
}

TEST(PluginRegistry, PluginErrorsComeBackAsTransportErrors) {
  PluginRegistry registry({DOMINO_TEST_PLUGIN_DIR});
  testing::FileBootstrap bootstrap(testing::make_temp_directory());
  domino_comm_config_t config{};
  config.rank = 0;
  config.size = 2;
  config.bootstrap = bootstrap.table();
  try {
    Communicator comm(registry.find("echo"), config);
    FAIL() << "expected the echo plugin to refuse two ranks";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status(), DOMINO_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("only one rank"), std::string::npos) << e.what();
  }
}

TEST(PluginRegistry, RejectsALibraryThatIsNotAPlugin) {
  const std::string dir = testing::make_temp_directory();
  std::ofstream(dir + "/libdomino-plugin-broken.so") << "not an ELF file";
  try {
    PluginRegistry registry({dir});
    FAIL() << "expected rejection";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("libdomino-plugin-broken.so"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

// A plugin built for ABI 5, before allreduce_with: it loads, only its own entries are read (the
// test plugin puts a failing allreduce_with just past its table), and a name handed down runs
// over its links instead.
TEST(PluginRegistry, LoadsAPluginBuiltForAnOlderAbiAndReadsOnlyItsEntries) {
  PluginRegistry registry({DOMINO_TEST_PLUGIN_DIR});
  const domino_plugin_t* old = registry.find("mailbox5");
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->abi_version, 5u);
  EXPECT_EQ(old->allreduce_with, nullptr);
  EXPECT_NE(old->link_wait, nullptr);
  std::vector<int64_t> global = {0};
  domino_comm_config_t config{};
  config.rank = 0;
  config.size = 1;
  config.global_ranks = global.data();
  config.group_name = "abi5";
  config.timeout_ms = 1000;
  Communicator comm(old, config);
  std::vector<double> data(10, 2.5);
  domino_buffer_t b{data.data(), data.size(), DOMINO_FLOAT64, -1};
  comm.collective(domino::make_call(domino::topology::Collective::kAllReduce, b, b, DOMINO_SUM),
                  std::string("ring"));
  EXPECT_EQ(data[0], 2.5);
}

TEST(PluginRegistry, RefusesAPluginOlderThanTheOldestAbiNamingBothVersions) {
  try {
    PluginRegistry registry({DOMINO_TEST_ABI2_PLUGIN_DIR});
    FAIL() << "an ABI 2 plugin was loaded";
  } catch (const TransportError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("libdomino-plugin-mailbox2.so"), std::string::npos) << message;
    EXPECT_NE(message.find("ABI versions 3 to " + std::to_string(DOMINO_PLUGIN_ABI_VERSION)),
              std::string::npos)
        << message;
  }
}

TEST(PluginRegistry, RejectsWrongAbiVersionsAndDuplicateNames) {
  PluginRegistry registry({});
  domino_plugin_t future = *registry.find("shm");
  future.abi_version = 99;
  future.name = "future";
  try {
    registry.add(&future, "test");
    ADD_FAILURE() << "an ABI 99 table was added";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("built for ABI version 99, this backend speaks 3 to"),
              std::string::npos)
        << e.what();
  }
  domino_plugin_t twin = *registry.find("shm");
  EXPECT_THROW(registry.add(&twin, "test"), TransportError);
}

TEST(PluginRegistry, RejectsAPluginWithSomeButNotAllLinkEntries) {
  PluginRegistry registry({});
  domino_plugin_t partial = *registry.find("shm");
  partial.name = "partial";
  partial.link_recv = nullptr;  // shm offers all three; keep only link_send
  partial.link_wait = nullptr;
  try {
    registry.add(&partial, "test");
    FAIL() << "a plugin with one of the three link entries was accepted";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("1 of the three link entries"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace domino
