// c10d's Flight Recorder for domino: every op of every domino group of this process, with its
// group, sequence numbers, sizes, dtypes and state as its lane really runs it, in a ring buffer
// that dumps in the form torch.distributed.flight_recorder's fr_trace reads (torch's own
// FlightRecorder<EventType> cannot be shared: libtorch exports none of it).
//
// Recording is on when TORCH_FR_BUFFER_SIZE (or its old name TORCH_NCCL_TRACE_BUFFER_SIZE) is
// set above 0, and then costs one uncontended lock and a few stores per op; unset or 0, one
// branch. A failed op dumps this process's buffer to TORCH_FR_DUMP_TEMP_FILE (or
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE) + global rank and asks every other rank, through the job's
// store, to dump its own, so fr_trace sees every rank, the one that never came included; the
// error reaches its caller once they have (engine/DumpHandshake.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <c10/util/ApproximateClock.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/DumpHandshake.h"

namespace domino {

class FlightRecorder {
 public:
  // The process's recorder, configured from the environment on first use.
  static FlightRecorder& get();
  bool enabled() const { return capacity_ > 0; }

  // A group as the dump names it: c10d's group name and description, its global ranks.
  size_t add_group(const std::string& name, const std::string& desc,
                   const std::vector<int64_t>& global_ranks);

  // How an op's tensors are recorded: as they are, or (what fr_trace checks) an all-gather's
  // output list and a reduce-scatter's input list as one [group size, n], all-to-all's lists as
  // one flat tensor a side.
  enum class Shapes { kAsGiven, kGatheredList, kScatteredList, kFlat };
  struct Op {
    size_t group;
    uint64_t collective_seq;
    uint64_t p2p_seq;
    uint64_t op_id;
    const char* name;  // fr_trace's op name ("all_reduce", "_all_gather_base", "send", ...)
    Shapes shapes = Shapes::kAsGiven;
    int self = -1;  // send / recv: this rank and the peer, group ranks
    int peer = -1;
    bool p2p = false;
    std::chrono::milliseconds timeout{0};
  };
  // Records an op scheduled now with its inputs' and outputs' shapes; returns its id, 0 when
  // disabled.
  uint64_t record(const Op& op, const std::vector<at::Tensor>& inputs,
                  const std::vector<at::Tensor>& outputs);
  void started(uint64_t id);
  void completed(uint64_t id);  // and retired
  // Ended without completing (failed, aborted): stays "started" (or "scheduled") in the dump.
  void retired(uint64_t id);

  // This process's buffer as fr_trace reads it (a pickle); only_active leaves out completed ops.
  std::string dump(bool only_active = false);
  // Writes dump() to the dump prefix + global_rank; returns the path, or nullopt when disabled
  // (and warns when it cannot write).
  std::optional<std::string> dump_to_file(int64_t global_rank);

  // A failed op of a group of group_ranks (global ranks): dumps this process's buffer (at most
  // once a second), asks every rank of the job to dump theirs through the store watch() was
  // given, and waits up to wait for the group's recording ranks to acknowledge, so that every
  // dump is on disk before the error reaches its caller.
  void on_failure(int64_t global_rank, const std::vector<int64_t>& group_ranks,
                  const std::string& what, std::chrono::milliseconds wait);
  // group (its ProcessGroupDomino) is made over store: watches the job's store for other ranks'
  // dump requests (one thread per process, while enabled), and answers them within wait of the
  // request at exit too. unwatch when the group is destroyed.
  void watch(const void* group, const c10::intrusive_ptr<c10d::Store>& store, int64_t global_rank,
             std::chrono::milliseconds wait);
  void unwatch(const void* group);

 private:
  FlightRecorder();
  ~FlightRecorder();
  struct Slot;
  struct Group;
  // A dump for a failure of this rank's own, or in answer to another rank's request.
  bool dump_for(int64_t global_rank, bool answering);
  static void finish_at_exit();

  size_t capacity_ = 0;
  std::unique_ptr<c10::ApproximateClockToUnixTimeConverter> clock_;
  std::mutex mutex_;
  std::unique_ptr<Slot[]> slots_;
  std::vector<Group> groups_;
  uint64_t next_id_ = 1;
  size_t next_slot_ = 0;
  std::string dump_prefix_;
  // When the last dump began: one dump a second at most for this rank's own failures.
  std::atomic<int64_t> last_dump_ms_{0};
  std::mutex dump_mutex_;
  int64_t last_written_ms_ = 0;  // when the last dump that reached the disk began
  // The dump handshake between ranks; never destroyed (its thread may wait in the store).
  std::mutex watch_mutex_;
  DumpHandshake* handshake_ = nullptr;
  // The live groups' job stores, which a pending request pins.
  std::vector<std::pair<const void*, c10::intrusive_ptr<c10d::Store>>> live_stores_;
};

// fr_trace's name for a domino op ("all_reduce" -> "all_reduce", "all_gather_into_tensor" ->
// "_all_gather_base", ...), for the ops its analyzer knows in every torch release we build for,
// and how its tensors are recorded.
struct FlightOpName {
  const char* name;
  FlightRecorder::Shapes shapes;
};
FlightOpName flight_recorder_op_name(const char* domino_op);

}  // namespace domino
