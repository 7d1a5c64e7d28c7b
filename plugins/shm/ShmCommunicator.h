// Collectives among the ranks of one host through one shared segment per group.
//
// Each rank owns two payload slots (double-buffered by round parity, so a round needs no closing
// barrier). Small messages: every rank copies in, meets the others, and reduces everything.
// Large messages: chunks of one slot each; per chunk every rank reduces its own slice of all
// slots (reduce-scatter), meets the others, and copies out every slice (all-gather).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "GroupBarrier.h"
#include "SharedSegment.h"
#include "domino/plugin.h"

namespace domino::shm {

class ShmCommunicator {
 public:
  explicit ShmCommunicator(const domino_comm_config_t& config);

  void allreduce(const domino_buffer_t& send, const domino_buffer_t& recv, domino_redop_t op);
  void barrier();

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slot_bytes() const { return slot_bytes_; }

 private:
  enum class Op : uint32_t { kBarrier = 1, kAllreduce = 2 };
  static const char* op_name(uint32_t op);

  // Publishes this rank's descriptor for the round, meets every rank, and checks they agree.
  void open_round(const OpDescriptor& mine, const char* op_name, Deadline deadline);
  void meet(const char* op_name, Deadline deadline);
  void close_round() { parity_ ^= 1u; }
  char* slot(uint32_t parity, int rank) const;
  Deadline deadline() const { return std::chrono::steady_clock::now() + timeout_; }
  void check_usable(const char* op_name) const;
  std::string describe(const OpDescriptor& d) const;

  int rank_;
  int size_;
  std::string group_label_;
  std::chrono::milliseconds timeout_;
  size_t small_message_bytes_;
  SharedSegment segment_;
  SegmentHeader* header_ = nullptr;
  size_t slot_bytes_ = 0;
  std::optional<GroupBarrier> barrier_;  // set once the segment is mapped
  uint64_t phase_ = 0;
  uint32_t parity_ = 0;
  uint64_t sequence_ = 0;
  std::string broken_reason_;
  std::vector<const void*> inputs_;
};

}  // namespace domino::shm
