// Joins the job the way torchrun describes it (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
// returns a domino backend over all ranks.
#pragma once

#include <domino/ProcessGroupDomino.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <string>

namespace example {

inline std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

inline c10::intrusive_ptr<domino::ProcessGroupDomino> join_domino_group(const std::string& name) {
  const int rank = std::stoi(env_or("RANK", "0"));
  const int world = std::stoi(env_or("WORLD_SIZE", "1"));
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(std::stoi(env_or("MASTER_PORT", "29500")));
  // Under torchrun the agent already hosts the store; by hand, rank 0 does.
  store_options.isServer = rank == 0 && env_or("TORCHELASTIC_USE_AGENT_STORE", "") != "True";
  store_options.numWorkers = world;
  auto store =
      c10::make_intrusive<c10d::TCPStore>(env_or("MASTER_ADDR", "127.0.0.1"), store_options);
  auto group_store = c10::make_intrusive<c10d::PrefixStore>("domino-" + name, store);
  auto options = domino::ProcessGroupDomino::Options::create(std::chrono::seconds(60));
  options->group_name = name;
  return c10::make_intrusive<domino::ProcessGroupDomino>(group_store, rank, world, options);
}

}  // namespace example
