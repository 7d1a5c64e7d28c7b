#include <gtest/gtest.h>

#include <algorithm>

#include "config/SettingDeclarations.h"
#include "config/Settings.h"
#include "config/WireSettings.h"

namespace domino {
namespace {

TEST(Settings, EmptyEnvironmentGivesDefaults) {
  const ParsedSettings parsed = parse_settings({});
  EXPECT_TRUE(parsed.warnings.empty());
  EXPECT_EQ(parsed.settings.intra_transport, "auto");
  EXPECT_EQ(parsed.settings.intra_algorithm, "");
  EXPECT_EQ(parsed.settings.shm_bytes, 0u);
}

TEST(Settings, UnknownDominoVariablesWarnByName) {
  const ParsedSettings parsed = parse_settings({{"DOMINO_TYPO", "1"}, {"OTHER", "x"}});
  ASSERT_EQ(parsed.warnings.size(), 1u);
  EXPECT_NE(parsed.warnings[0].find("DOMINO_TYPO"), std::string::npos);
}

TEST(Settings, InvalidChoiceNamesVariableValueAndAcceptedValues) {
  try {
    parse_settings({{"DOMINO_ALGO", "fastest"}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("DOMINO_ALGO"), std::string::npos) << message;
    EXPECT_NE(message.find("fastest"), std::string::npos) << message;
    EXPECT_NE(message.find("rsag"), std::string::npos) << message;
  }
}

TEST(Settings, ChoicesAreCaseInsensitive) {
  EXPECT_EQ(parse_settings({{"DOMINO_PRIORITY", "HIGH"}}).settings.priority, Priority::kHigh);
  EXPECT_EQ(parse_settings({{"DOMINO_LOG", "debug"}}).settings.log_level, LogLevel::kDebug);
}

TEST(Settings, ByteCountsTakeSuffixes) {
  EXPECT_EQ(parse_bytes("X", "4096"), 4096u);
  EXPECT_EQ(parse_bytes("X", "64K"), 64u << 10);
  EXPECT_EQ(parse_bytes("X", "8M"), 8u << 20);
  EXPECT_EQ(parse_bytes("X", "1G"), 1ull << 30);
  EXPECT_THROW(parse_bytes("X", "0"), ConfigError);
  EXPECT_THROW(parse_bytes("X", "-1"), ConfigError);
  EXPECT_THROW(parse_bytes("X", "12 MB"), ConfigError);
  EXPECT_THROW(parse_settings({{"DOMINO_SHM_BYTES", "4K"}}), ConfigError);  // below the minimum
  EXPECT_EQ(parse_settings({{"DOMINO_SHM_BYTES", "16M"}}).settings.shm_bytes, 16u << 20);
}

TEST(Settings, TransportNamesMustBePlainWords) {
  EXPECT_EQ(parse_settings({{"DOMINO_INTRA_TRANSPORT", "shm"}}).settings.intra_transport, "shm");
  EXPECT_THROW(parse_settings({{"DOMINO_INTER_TRANSPORT", "../evil"}}), ConfigError);
  EXPECT_THROW(parse_settings({{"DOMINO_HOST_ID", ""}}), ConfigError);
}

TEST(Settings, TopologyFileMustBeReadable) {
  EXPECT_THROW(parse_settings({{"DOMINO_TOPO_FILE", "/nonexistent/topo.xml"}}), ConfigError);
}

TEST(Settings, SocketIfnameIsEachRanksOwnAndMustNameSomething) {
  EXPECT_EQ(parse_settings({{"DOMINO_SOCKET_IFNAME", "^docker,lo"}}).settings.socket_ifname,
            "^docker,lo");
  try {
    parse_settings({{"DOMINO_SOCKET_IFNAME", "^"}});
    ADD_FAILURE() << "an empty exclusion list was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DOMINO_SOCKET_IFNAME='^' is not valid"),
              std::string::npos)
        << e.what();
  }
  // Hosts name their NICs differently: a rank keeps its own list, never rank 0's.
  const AdoptedEnvironment adopted = adopt_wire_settings(
      {{"DOMINO_SOCKET_IFNAME", "ens5"}}, wire_record({{"DOMINO_SOCKET_IFNAME", "eth0"}}), 1);
  EXPECT_EQ(adopted.env.at("DOMINO_SOCKET_IFNAME"), "ens5");
  EXPECT_TRUE(adopted.differences.empty());
}

TEST(Settings, PluginPathSplitsOnColons) {
  const auto s = parse_settings({{"DOMINO_PLUGIN_PATH", "/a::/b:"}}).settings;
  EXPECT_EQ(s.plugin_path, (std::vector<std::string>{"/a", "/b"}));
}

TEST(Settings, EveryKnownVariableIsAccepted) {
  for (const auto& name : known_variables()) {
    EXPECT_EQ(name.rfind("DOMINO_", 0), 0u) << name;
  }
  EXPECT_FALSE(parse_settings({{"DOMINO_SINGLE_COPY", "off"}}).settings.single_copy);
  EXPECT_THROW(parse_settings({{"DOMINO_SINGLE_COPY", "on"}}), ConfigError);
}

TEST(Settings, ReductionKernelsTakeTheVariantsNames) {
  EXPECT_EQ(parse_settings({}).settings.reduction_kernels, "auto");
  EXPECT_EQ(parse_settings({{"DOMINO_REDUCTION_KERNELS", "avx2"}}).settings.reduction_kernels,
            "avx2+f16c");
  EXPECT_EQ(parse_settings({{"DOMINO_REDUCTION_KERNELS", "generic"}}).settings.reduction_kernels,
            "generic");
  try {
    parse_settings({{"DOMINO_REDUCTION_KERNELS", "sse"}});
    FAIL() << "an unknown variant was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DOMINO_REDUCTION_KERNELS"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("avx512"), std::string::npos) << e.what();
  }
}

TEST(Settings, RailChunkBytesTurnsThePipelineOffAtZeroAndRefusesTinyChunks) {
  EXPECT_EQ(parse_settings({}).settings.rail_chunk_bytes, 2u << 20);
  EXPECT_EQ(parse_settings({{"DOMINO_RAIL_CHUNK_BYTES", "0"}}).settings.rail_chunk_bytes, 0u);
  EXPECT_EQ(parse_settings({{"DOMINO_RAIL_CHUNK_BYTES", "4M"}}).settings.rail_chunk_bytes,
            4u << 20);
  try {
    parse_settings({{"DOMINO_RAIL_CHUNK_BYTES", "1K"}});
    FAIL() << "a 1 KiB rail chunk was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DOMINO_RAIL_CHUNK_BYTES"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("at least 64K"), std::string::npos) << e.what();
  }
}

TEST(Settings, GpuTransportAndBlockingWaitTakeTheirNamedValues) {
  EXPECT_EQ(parse_settings({}).settings.gpu_transport, GpuTransport::kAuto);
  EXPECT_EQ(parse_settings({{"DOMINO_GPU_TRANSPORT", "staged"}}).settings.gpu_transport,
            GpuTransport::kStaged);
  EXPECT_EQ(parse_settings({{"DOMINO_GPU_TRANSPORT", "NCCL"}}).settings.gpu_transport,
            GpuTransport::kNccl);
  EXPECT_TRUE(parse_settings({{"DOMINO_BLOCKING_WAIT", "1"}}).settings.blocking_wait);
  EXPECT_FALSE(parse_settings({}).settings.blocking_wait);
  for (const auto& [name, bad] : std::vector<std::pair<std::string, std::string>>{
           {"DOMINO_GPU_TRANSPORT", "gloo"}, {"DOMINO_BLOCKING_WAIT", "yes"}}) {
    try {
      parse_settings({{name, bad}});
      ADD_FAILURE() << name << "=" << bad << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(Settings, AlgoTakesOnePlanOneInterAlgorithmAndOneSharedMemoryAlgorithm) {
  const Settings s = parse_settings({{"DOMINO_ALGO", "hierarchical,Rabenseifner,direct"}}).settings;
  EXPECT_EQ(s.plan, "hierarchical");
  EXPECT_EQ(s.inter_algorithm, "rabenseifner");
  EXPECT_EQ(s.intra_algorithm, "direct");
  EXPECT_EQ(parse_settings({{"DOMINO_ALGO", "auto"}}).settings.plan, "auto");
  // intra: runs a links algorithm inside the host; the inter-host one stays separate.
  const Settings both =
      parse_settings({{"DOMINO_ALGO", "flat,ring,intra:Recursive_Doubling"}}).settings;
  EXPECT_EQ(both.inter_algorithm, "ring");
  EXPECT_EQ(both.intra_algorithm, "recursive_doubling");
  EXPECT_EQ(parse_settings({{"DOMINO_ALGO", "intra:rsag"}}).settings.intra_algorithm, "rsag");
  for (const char* bad : {"ring,rabenseifner", "flat,leader", "auto,ring", "hierarchical,", "x",
                          "intra:ring,direct", "intra:flat", "intra:bogus", "intra:"}) {
    EXPECT_THROW(parse_settings({{"DOMINO_ALGO", bad}}), ConfigError) << bad;
  }
}

TEST(Settings, CostsParseOrNameTheVariable) {
  const Settings s = parse_settings({{"DOMINO_COST_INTER", "25,1.5"}}).settings;
  ASSERT_TRUE(s.cost_inter.has_value());
  EXPECT_DOUBLE_EQ(s.cost_inter->latency_us, 25);
  EXPECT_FALSE(s.cost_intra.has_value());
  try {
    parse_settings({{"DOMINO_COST_INTRA", "fast"}});
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DOMINO_COST_INTRA"), std::string::npos);
  }
}

TEST(WireSettings, EveryWireVariableIsAKnownOne) {
  const auto& known = known_variables();
  for (const std::string& name : wire_variables()) {
    EXPECT_NE(std::find(known.begin(), known.end(), name), known.end()) << name;
  }
}

TEST(WireSettings, RankZerosValuesReplaceOwnAndEachDifferenceIsNamed) {
  const std::map<std::string, std::string> rank0 = {{"DOMINO_ALGO", "direct"},
                                                    {"DOMINO_LOG", "debug"}};
  const std::map<std::string, std::string> own = {
      {"DOMINO_ALGO", "rsag"}, {"DOMINO_CHUNK_BYTES", "64K"}, {"DOMINO_HOST_ID", "b"}};
  const AdoptedEnvironment adopted = adopt_wire_settings(own, wire_record(rank0), 3);
  EXPECT_EQ(adopted.env.at("DOMINO_ALGO"), "direct");
  EXPECT_EQ(adopted.env.count("DOMINO_CHUNK_BYTES"), 0u);  // unset on rank 0: unset here
  EXPECT_EQ(adopted.env.at("DOMINO_HOST_ID"), "b");        // not a wire setting: stays own
  EXPECT_EQ(adopted.env.count("DOMINO_LOG"), 0u);          // rank 0's local settings stay its own
  ASSERT_EQ(adopted.differences.size(), 2u);
  EXPECT_NE(adopted.differences[0].find("DOMINO_ALGO is 'rsag' on rank 3 but 'direct' on rank 0"),
            std::string::npos)
      << adopted.differences[0];
  EXPECT_NE(adopted.differences[1].find("DOMINO_CHUNK_BYTES is '64K' on rank 3 but unset"),
            std::string::npos)
      << adopted.differences[1];
  EXPECT_EQ(parse_settings(adopted.env).settings.intra_algorithm, "direct");
}

TEST(WireSettings, AgreeingRanksSeeNoDifference) {
  const std::map<std::string, std::string> env = {{"DOMINO_SINGLE_COPY", "off"},
                                                  {"DOMINO_SHM_BYTES", "8M"}};
  const AdoptedEnvironment adopted = adopt_wire_settings(env, wire_record(env), 1);
  EXPECT_TRUE(adopted.differences.empty());
  EXPECT_EQ(adopted.env, env);
}

TEST(WireSettings, ARecordFromAnotherVersionIsRefused) {
  EXPECT_THROW(adopt_wire_settings({}, "DOMINO_FUTURE=1\n", 1), std::invalid_argument);
  EXPECT_THROW(adopt_wire_settings({}, "garbage", 1), std::invalid_argument);
}

// docs/extending.md's "a new setting": one declaration, and the known list, the agreed list and
// the parsing all follow from it.
TEST(SettingDeclarations, ANewDeclarationIsKnownParsedAndAgreedWithNothingElseToEdit) {
  std::vector<SettingDeclaration> declared(setting_declarations().begin(),
                                           setting_declarations().end());
  declared.push_back(SettingDeclaration{
      "DOMINO_EXAMPLE_BYTES", Agreement::kRank0, "byte count", "64K", "An example.",
      [](const std::string& name, const std::string& value, Settings& s) {
        s.chunk_bytes = parse_bytes(name, value);
      }});
  const auto names = variable_names(declared);
  EXPECT_EQ(names.back(), "DOMINO_EXAMPLE_BYTES");
  EXPECT_EQ(variable_names(declared, Agreement::kRank0).back(), "DOMINO_EXAMPLE_BYTES");
  const ParsedSettings parsed = parse_settings({{"DOMINO_EXAMPLE_BYTES", "2M"}}, declared);
  EXPECT_TRUE(parsed.warnings.empty());
  EXPECT_EQ(parsed.settings.chunk_bytes, 2u << 20);
  EXPECT_THROW(parse_settings({{"DOMINO_EXAMPLE_BYTES", "lots"}}, declared), ConfigError);
  // The built-in table does not know it.
  EXPECT_EQ(parse_settings({{"DOMINO_EXAMPLE_BYTES", "2M"}}).warnings.size(), 1u);
}

TEST(SettingDeclarations, TheKnownAndAgreedListsAreTheDeclarations) {
  EXPECT_EQ(known_variables(), variable_names(setting_declarations()));
  EXPECT_EQ(wire_variables(), variable_names(setting_declarations(), Agreement::kRank0));
  for (const SettingDeclaration& d : setting_declarations()) {
    EXPECT_NE(std::string(d.accepted), "") << d.name;
    EXPECT_NE(std::string(d.default_value), "") << d.name;
    EXPECT_NE(std::string(d.effect), "") << d.name;
    // A table cell: a '|' would end it early.
    for (const char* text : {d.accepted, d.default_value, d.effect}) {
      EXPECT_EQ(std::string(text).find('|'), std::string::npos) << d.name;
    }
  }
}

// Spelled out, not derived: a declaration that changed its agreement would otherwise go unseen.
TEST(SettingDeclarations, TheAgreedSetIsTheOneListedHere) {
  auto agreed = wire_variables();
  std::sort(agreed.begin(), agreed.end());
  EXPECT_EQ(agreed, (std::vector<std::string>{
                        "DOMINO_ALGO", "DOMINO_CHUNK_BYTES", "DOMINO_COST_INTER",
                        "DOMINO_COST_INTRA", "DOMINO_GPU_TRANSPORT", "DOMINO_INTER_TRANSPORT",
                        "DOMINO_INTRA_TRANSPORT", "DOMINO_PRIORITY", "DOMINO_RAIL_CHUNK_BYTES",
                        "DOMINO_SHM_BYTES", "DOMINO_SINGLE_COPY"}));
}

}  // namespace
}  // namespace domino
