// What ends or shrinks a group: c10d's abort() and dist.shrink_group. The ranks that remain
// build a new group among themselves over the parent's store; the parent is then ended, so
// that a rank left out which still calls it is told rather than left waiting.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "DeviceCollectives.h"
#include "ProcessGroupDominoImpl.h"
#include "config/Log.h"
#include "engine/RoutedComm.h"

namespace domino {

namespace {
// c10d's SHRINK_ABORT (torch.distributed.distributed_c10d).
constexpr int kShrinkAbort = 0x01;

std::string rank_list(const std::vector<int64_t>& ranks) {
  std::string out;
  for (int64_t r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return "[" + out + "]";
}
}  // namespace

std::string ProcessGroupDomino::Impl::aborted_message(const char* op) const {
  return where(op).str() +
         ": the group was ended (ProcessGroup abort(), or shrink_group, which ends the group it "
         "shrinks); use the shrunk group, or destroy this one and create a new one";
}

void ProcessGroupDomino::abort() {
  impl_->abort();
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupDomino::shrink(
    const std::vector<int64_t>& ranks_to_exclude, int shrink_flags,
    const c10::intrusive_ptr<c10d::Backend::Options>& opts_override) {
  return impl_->shrink(ranks_to_exclude, shrink_flags, opts_override);
}

// From any thread: ends the group's work in flight on every transport (on one host every rank's
// work, within about 100 ms) and fails every later op, naming it.
void ProcessGroupDomino::Impl::abort() {
  aborted_.store(true);
  bool all = true;
  {
    std::lock_guard<std::mutex> lock(timeout_mutex_);  // a lane may be publishing its comms
    for (LaneComm& lane : comms_) {
      if (lane.comm && !lane.comm->abort()) all = false;
    }
  }
  device_->abort("domino: " + label() +
                 " was aborted (ProcessGroup abort(), or shrink_group); CUDA collectives on it "
                 "fail from now on. Use the shrunk group, or destroy this one and create a new "
                 "one.");
  if (!all) {
    log_line(LogLevel::kWarn, rank_,
             label() +
                 ": a transport of this group has no comm_abort (plugin ABI 3); its work "
                 "in flight ends only at the group's timeout");
  }
}

// dist.shrink_group: the group without ranks_to_exclude (group ranks), built by the ranks that
// remain, in order, over the same store; SHRINK_ABORT aborts this group first. The ranks left out,
// alive or dead, take no part, and find this group ended if they call it.
c10::intrusive_ptr<c10d::Backend> ProcessGroupDomino::Impl::shrink(
    const std::vector<int64_t>& ranks_to_exclude, int shrink_flags,
    const c10::intrusive_ptr<c10d::Backend::Options>& opts_override) {
  std::vector<int64_t> leaving = ranks_to_exclude;
  std::sort(leaving.begin(), leaving.end());
  std::string what = where("shrink").str() + " without group ranks " + rank_list(leaving);
  std::vector<bool> excluded(static_cast<size_t>(size_), false);
  for (size_t i = 0; i < leaving.size(); ++i) {
    const int64_t r = leaving[i];
    TORCH_CHECK_VALUE(r >= 0 && r < size_, what, ": rank ", r,
                      " is not a rank of this group (group ranks 0..", size_ - 1,
                      "); name the ranks to exclude by their rank in the group");
    TORCH_CHECK_VALUE(!excluded[static_cast<size_t>(r)], what, ": rank ", r,
                      " is listed twice; list each rank to exclude once");
    excluded[static_cast<size_t>(r)] = true;
  }
  TORCH_CHECK_VALUE(!leaving.empty() && leaving.size() < excluded.size(), what,
                    ": exclude at least one rank and keep at least one of the ", size_);
  std::vector<int64_t> leaving_global;
  for (int64_t r : leaving) leaving_global.push_back(global_ranks_[static_cast<size_t>(r)]);
  what += " (global " + rank_list(leaving_global) + ")";
  TORCH_CHECK(!excluded[static_cast<size_t>(rank_)], what, ": this rank (", rank_,
              ") is one of those excluded; only the ranks that remain call shrink_group");
  const bool abort_first = (shrink_flags & kShrinkAbort) != 0;
  // NCCL's contract: a graceful shrink does not silently end work the caller still waits for.
  TORCH_CHECK(abort_first || lanes_.pending() == 0, what, ": ", lanes_.pending(),
              " collective(s) of this group are still queued or running; wait for them, or "
              "pass shrink_flags=SHRINK_ABORT to end them");
  // CUDA work the lanes have handed to the device may still run there: the parent's abort
  // below would cut it short.
  if (!abort_first) device_->finish_device_work(what);

  // Every remaining rank meets under one prefix of the parent's store, apart from the parent's
  // keys and from other shrinks of it (ranks naming other exclusions never meet). Counted on
  // success only, so that a failed attempt can be repeated by every rank alike.
  std::string prefix = "domino/shrink/" + std::to_string(shrinks_ + 1) + "/without";
  for (int64_t r : leaving) prefix += "-" + std::to_string(r);
  auto store = c10::make_intrusive<c10d::PrefixStore>(prefix + "/", store_);
  try {
    // Before anything is ended: a store that no longer serves (a TCPStore on a rank that died)
    // must fail the shrink while the parent group is still whole.
    store->set("alive/" + std::to_string(rank_), std::vector<uint8_t>{1});
  } catch (const std::exception& e) {
    C10_THROW_ERROR(DistBackendError,
                    what + ": the group's store no longer serves (" + e.what() +
                        "); shrinking needs a store that outlives the ranks left out (a "
                        "FileStore, or torchrun's agent store)");
  }
  std::vector<int64_t> global;
  int new_rank = -1;
  for (int r = 0; r < size_; ++r) {
    if (excluded[static_cast<size_t>(r)]) continue;
    if (r == rank_) new_rank = static_cast<int>(global.size());
    global.push_back(global_ranks_[static_cast<size_t>(r)]);
  }
  auto options = Options::create(timeout());
  options->priority = options_->priority;
  options->group_name = group_name_ + ":shrunk" + std::to_string(shrinks_ + 1);
  // Counted only here, where every remaining rank that came this far meets the others.
  ++shrink_attempts_;
  try {
    // Before the parent's NCCL communicators are aborted below: ncclCommShrink needs them.
    options->inherited_device_comms =
        device_->shrink(*store, std::vector<int32_t>(leaving.begin(), leaving.end()), abort_first,
                        new_rank, global, options->group_name, shrink_attempts_);
  } catch (const std::exception& e) {
    if (abort_first) abort();
    C10_THROW_ERROR(DistBackendError,
                    what +
                        " failed while the remaining ranks shrank the group's NCCL "
                        "communicators (every one of them must call shrink_group with the "
                        "same ranks to exclude): " +
                        e.what());
  }
  if (abort_first) abort();
  options->global_ranks_in_group.assign(global.begin(), global.end());
  if (opts_override) {
    options->timeout = opts_override->timeout;
    const auto* ours = dynamic_cast<const Options*>(opts_override.get());
    if (ours != nullptr && !ours->priority.empty()) options->priority = ours->priority;
  }
  c10::intrusive_ptr<ProcessGroupDomino> shrunk;
  try {
    shrunk = c10::make_intrusive<ProcessGroupDomino>(store, new_rank,
                                                     static_cast<int>(global.size()), options);
  } catch (const c10::Error& e) {
    C10_THROW_ERROR(DistBackendError, what +
                                          " failed while the remaining ranks built the new "
                                          "group (every one of them must call shrink_group "
                                          "with the same ranks to exclude): " +
                                          e.what_without_backtrace());
  }
  ++shrinks_;
  if (!abort_first) abort();  // the ranks left out are told, not left waiting
  log_line(LogLevel::kInfo, rank_,
           what + ": rank " + std::to_string(rank_) + " is rank " + std::to_string(new_rank) +
               " of " + std::to_string(global.size()) + " in " + options->group_name);
  return shrunk;
}

}  // namespace domino
