// A store key scope that no earlier incarnation of a group wrote to. A store can outlive the
// processes that wrote to it: torchrun shares its rendezvous store across restarts, and a
// FileStore persists. A key read at init may then be a dead rank's (the shared-memory ticket of
// a server that is gone, a UCX address nobody answers), and the new group waits on it until its
// timeout. Rank 0 draws a random scope and publishes it; every other rank proves that it read
// this incarnation's scope by a token of its own that rank 0 echoes under that scope.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace domino {

// Throws c10::DistBackendError naming `group` and the rank at the timeout.
std::string incarnation_scope(c10d::Store& store, int rank, int size,
                              std::chrono::milliseconds timeout, const std::string& group);

}  // namespace domino
