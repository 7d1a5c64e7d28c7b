#include "FlightRecorder.h"

#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/distributed/c10d/FlightRecorder.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include "config/Log.h"

namespace domino {

namespace {
using SystemClock = std::chrono::system_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SystemClock::now().time_since_epoch())
      .count();
}

// Entries are stamped with the CPU's cycle counter where it has one (a few ns, where the wall
// clock takes tens); the dump converts the stamps to Unix time.
int64_t stamp() {
  return static_cast<int64_t>(c10::getApproximateTime());
}

// The first of names that is set, as torch's getCvar* read them.
const char* first_set(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return nullptr;
}

// An op's handle is its id and its slot, so marking it started or completed needs no division.
constexpr int kSlotBits = 24;
constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
constexpr long long kMaxEntries = 1LL << kSlotBits;

size_t buffer_size() {
  const char* value = first_set({"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"});
  if (value == nullptr) return 0;  // off unless asked for: recording is never free
  char* end = nullptr;
  const long long entries = std::strtoll(value, &end, 10);
  if (end == value || *end != '\0' || entries < 0) {
    log_line(LogLevel::kWarn, -1,
             std::string("TORCH_FR_BUFFER_SIZE='") + value +
                 "' is not a count of entries; the Flight Recorder stays off");
    return 0;
  }
  if (entries > kMaxEntries) {
    log_line(LogLevel::kWarn, -1,
             "TORCH_FR_BUFFER_SIZE=" + std::string(value) +
                 " is more than the Flight Recorder "
                 "keeps; it keeps the last " +
                 std::to_string(kMaxEntries) + " ops");
    return static_cast<size_t>(kMaxEntries);
  }
  return static_cast<size_t>(entries);
}

std::string dump_prefix() {
  if (const char* set = first_set({"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"})) {
    return set;
  }
  // torch's own default, so fr_trace finds every backend's dumps in one folder.
  std::string cache;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    cache = xdg;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    cache = std::string(home) + "/.cache";
  } else {
    cache = "/tmp";
  }
  return cache + "/torch/comm_lib_trace_rank_";
}

std::string ranks_text(const std::vector<int64_t>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + "]";
}

// Creates every missing folder above path's last component.
void make_parents(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    ::mkdir(path.substr(0, slash).c_str(), 0700);
  }
}

}  // namespace

struct FlightRecorder::Group {
  std::string name;
  std::string desc;
  std::vector<int64_t> ranks;
};

// Written by record() under the lock; stamped by started() and completed() from the lanes
// without it (an op's stamps are two stores, not two lock round trips).
struct FlightRecorder::Slot {
  std::atomic<uint64_t> id{0};  // 0: never used, or being written
  Op op;
  int64_t created_ns = 0;
  std::atomic<int64_t> started_ns{0};
  std::atomic<int64_t> completed_ns{0};
  std::atomic<bool> retired{false};
  // Shapes as fr_trace reads them: each tensor's rank, then every size in a row.
  c10::SmallVector<int64_t, 4> input_dims;
  c10::SmallVector<int64_t, 4> output_dims;
  c10::SmallVector<int64_t, 8> sizes;
  c10::SmallVector<c10::ScalarType, 4> input_dtypes;
  c10::SmallVector<c10::ScalarType, 4> output_dtypes;
  std::thread::id thread;
};

FlightOpName flight_recorder_op_name(const char* domino_op) {
  using Shapes = FlightRecorder::Shapes;
  static const std::pair<std::string_view, FlightOpName> kNames[] = {
      {"all_reduce", {"all_reduce", Shapes::kAsGiven}},
      {"all_reduce_sparse", {"all_reduce", Shapes::kAsGiven}},
      {"all_reduce_coalesced", {"allreduce_coalesced", Shapes::kAsGiven}},
      {"broadcast", {"broadcast", Shapes::kAsGiven}},
      {"reduce", {"reduce", Shapes::kAsGiven}},
      {"all_gather", {"all_gather", Shapes::kGatheredList}},
      {"all_gather_into_tensor", {"_all_gather_base", Shapes::kAsGiven}},
      {"all_gather_coalesced", {"ALLGATHER_coalesced", Shapes::kAsGiven}},
      {"all_gather_into_tensor_coalesced", {"all_gather_into_tensor_coalesced", Shapes::kAsGiven}},
      {"reduce_scatter", {"reduce_scatter", Shapes::kScatteredList}},
      {"reduce_scatter_tensor", {"_reduce_scatter_base", Shapes::kAsGiven}},
      {"reduce_scatter_tensor_coalesced", {"reduce_scatter_tensor_coalesced", Shapes::kAsGiven}},
      // torch 2.11's analyzer lacks all_to_all_single.
      {"all_to_all", {"all_to_all", Shapes::kFlat}},
      {"all_to_all_single", {"all_to_all", Shapes::kFlat}},
      {"gather", {"gather", Shapes::kAsGiven}},
      {"gather_single", {"gather", Shapes::kAsGiven}},
      {"scatter", {"scatter", Shapes::kAsGiven}},
      {"barrier", {"all_reduce_barrier", Shapes::kAsGiven}},  // as ProcessGroupNCCL records it
      {"send", {"send", Shapes::kAsGiven}},
      {"recv", {"recv", Shapes::kAsGiven}},
  };
  // Ops come from string literals, and a thread mostly issues the same few again and again.
  thread_local const char* last_op = nullptr;
  thread_local FlightOpName last{nullptr, Shapes::kAsGiven};
  if (domino_op == last_op) return last;
  last = {domino_op, Shapes::kAsGiven};
  for (const auto& [op, name] : kNames) {
    if (op == domino_op) last = name;
  }
  last_op = domino_op;
  return last;
}

FlightRecorder& FlightRecorder::get() {
  // Leaked on purpose: lanes and the watcher may record or dump while statics are destroyed.
  static FlightRecorder* recorder = new FlightRecorder();
  return *recorder;
}

FlightRecorder::FlightRecorder()
    : capacity_(buffer_size()),
      clock_(std::make_unique<c10::ApproximateClockToUnixTimeConverter>()),
      slots_(std::make_unique<Slot[]>(capacity_)),
      dump_prefix_(dump_prefix()) {}

FlightRecorder::~FlightRecorder() = default;

size_t FlightRecorder::add_group(const std::string& name, const std::string& desc,
                                 const std::vector<int64_t>& global_ranks) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (groups_[i].name == name && groups_[i].desc == desc && groups_[i].ranks == global_ranks) {
      return i;
    }
  }
  groups_.push_back(Group{name, desc, global_ranks});
  return groups_.size() - 1;
}

uint64_t FlightRecorder::record(const Op& op, const std::vector<at::Tensor>& inputs,
                                const std::vector<at::Tensor>& outputs) {
  if (capacity_ == 0) return 0;
  const int64_t created = stamp();
  const bool gathered_list = op.shapes == Shapes::kGatheredList && outputs.size() > 1;
  const bool scattered_list = op.shapes == Shapes::kScatteredList && inputs.size() > 1;
  const bool exchange = op.shapes == Shapes::kFlat;
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t index = next_slot_;
  if (++next_slot_ == capacity_) next_slot_ = 0;
  const uint64_t id = (next_id_++ << kSlotBits) | index;
  Slot& slot = slots_[index];
  slot.id.store(0, std::memory_order_relaxed);
  slot.op = op;
  slot.created_ns = created;
  slot.started_ns.store(0, std::memory_order_relaxed);
  slot.completed_ns.store(0, std::memory_order_relaxed);
  slot.retired.store(false, std::memory_order_relaxed);
  slot.thread = std::this_thread::get_id();
  slot.input_dims.clear();
  slot.output_dims.clear();
  slot.sizes.clear();
  slot.input_dtypes.clear();
  slot.output_dtypes.clear();
  auto add = [&](const std::vector<at::Tensor>& tensors, bool as_one, bool flat,
                 c10::SmallVector<int64_t, 4>& dims, c10::SmallVector<c10::ScalarType, 4>& dtypes) {
    if (tensors.empty()) return;
    if (as_one || flat) {
      int64_t numel = 0;
      for (const auto& t : tensors) numel += t.defined() ? t.numel() : 0;
      if (flat) {
        dims.push_back(1);
        slot.sizes.push_back(numel);
      } else {
        dims.push_back(2);
        slot.sizes.push_back(static_cast<int64_t>(tensors.size()));
        slot.sizes.push_back(numel / static_cast<int64_t>(tensors.size()));
      }
      dtypes.push_back(tensors[0].scalar_type());
      return;
    }
    for (const auto& t : tensors) {
      if (!t.defined()) continue;
      dims.push_back(t.dim());
      for (int64_t d : t.sizes()) slot.sizes.push_back(d);
      dtypes.push_back(t.scalar_type());
    }
  };
  add(inputs, scattered_list, exchange, slot.input_dims, slot.input_dtypes);
  add(outputs, gathered_list, exchange, slot.output_dims, slot.output_dtypes);
  slot.id.store(id, std::memory_order_release);
  return id;
}

namespace {
// Sets stamp to when if it is unset and the slot still holds id (only the op's own lane stamps
// it). An op that outlived its slot (capacity newer ops issued meanwhile) takes back what it
// wrote into the newer entry.
void stamp_once(const std::atomic<uint64_t>& slot_id, std::atomic<int64_t>& stamp, uint64_t id,
                int64_t when) {
  if (stamp.load(std::memory_order_relaxed) != 0) return;
  stamp.store(when, std::memory_order_relaxed);
  if (slot_id.load(std::memory_order_acquire) != id) stamp.compare_exchange_strong(when, 0);
}
}  // namespace

void FlightRecorder::started(uint64_t id) {
  if (id == 0) return;
  Slot& slot = slots_[id & kSlotMask];
  if (slot.id.load(std::memory_order_acquire) != id) return;  // overwritten since
  stamp_once(slot.id, slot.started_ns, id, stamp());
}

void FlightRecorder::completed(uint64_t id) {
  if (id == 0) return;
  Slot& slot = slots_[id & kSlotMask];
  if (slot.id.load(std::memory_order_acquire) != id) return;
  const int64_t when = stamp();
  stamp_once(slot.id, slot.started_ns, id, when);
  stamp_once(slot.id, slot.completed_ns, id, when);
  slot.retired.store(true, std::memory_order_release);
}

void FlightRecorder::retired(uint64_t id) {
  if (id == 0) return;
  Slot& slot = slots_[id & kSlotMask];
  if (slot.id.load(std::memory_order_acquire) == id) {
    slot.retired.store(true, std::memory_order_release);
  }
}

std::string FlightRecorder::dump(bool only_active) {
  using c10d::new_dict;
  using c10d::new_list;
  struct Entry {
    uint64_t id;
    Op op;
    int64_t created_ns, started_ns, completed_ns;
    bool retired;
    c10::SmallVector<int64_t, 4> input_dims, output_dims;
    c10::SmallVector<int64_t, 8> sizes;
    c10::SmallVector<c10::ScalarType, 4> input_dtypes, output_dtypes;
    std::thread::id thread;
  };
  std::vector<Entry> copies;
  std::vector<Group> groups;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    groups = groups_;
    // Oldest first: from the slot written next, once the ring has come round.
    const size_t filled = next_id_ - 1 < capacity_ ? next_id_ - 1 : capacity_;
    const size_t oldest = filled < capacity_ ? 0 : next_slot_;
    for (size_t k = 0; k < filled; ++k) {
      const Slot& s = slots_[(oldest + k) % capacity_];
      const uint64_t id = s.id.load();
      if (id == 0) continue;  // being written
      copies.push_back(Entry{id >> kSlotBits, s.op, s.created_ns, s.started_ns.load(),
                             s.completed_ns.load(), s.retired.load(), s.input_dims, s.output_dims,
                             s.sizes, s.input_dtypes, s.output_dtypes, s.thread});
    }
  }
  // Each group's last collective enqueued, started and completed, from the entries.
  std::vector<std::array<int64_t, 3>> status(groups.size(), {-1, -1, -1});
  for (const Entry& e : copies) {
    if (e.op.p2p || e.op.group >= status.size()) continue;
    const auto seq = static_cast<int64_t>(e.op.collective_seq);
    auto& last = status[e.op.group];
    last[0] = std::max(last[0], seq);
    if (e.started_ns != 0) last[1] = std::max(last[1], seq);
    if (e.completed_ns != 0) last[2] = std::max(last[2], seq);
  }
  const auto to_unix_ns = clock_->makeConverter();
  auto unix_ns = [&](int64_t t) {
    return static_cast<int64_t>(to_unix_ns(static_cast<c10::approx_time_t>(t)));
  };
  auto entries = new_list();
  for (const Entry& e : copies) {
    if (only_active && e.completed_ns != 0) continue;
    const Group& group = groups.at(e.op.group);
    auto dict = new_dict();
    dict.insert(c10d::record_id_key, static_cast<int64_t>(e.id));
    dict.insert(c10d::pg_id_key, static_cast<int64_t>(e.op.group));
    dict.insert(c10d::pg_name_key, std::make_tuple(group.name, group.desc));
    std::ostringstream thread;
    thread << e.thread;
    dict.insert(c10d::thread_id_key, thread.str());
    dict.insert(c10d::thread_name_key, std::string());
    dict.insert(c10d::collective_seq_id_key, static_cast<int64_t>(e.op.collective_seq));
    dict.insert(c10d::p2p_seq_id_key, static_cast<int64_t>(e.op.p2p_seq));
    dict.insert(c10d::op_id_key, static_cast<int64_t>(e.op.op_id));
    // "nccl:" is the one prefix every torch release's analyzer accepts (2.11 takes no other).
    std::string profiling = std::string("nccl:") + e.op.name;
    if (e.op.p2p) {
      profiling += " " + std::to_string(e.op.self) +
                   (std::string_view(e.op.name) == "send" ? "->" : "<-") +
                   std::to_string(e.op.peer);
    }
    dict.insert(c10d::profiling_name_key, profiling);
    dict.insert(c10d::time_created_key, unix_ns(e.created_ns));
    if (e.completed_ns != 0 && e.started_ns != 0) {
      dict.insert(c10d::duration_key, static_cast<double>(e.completed_ns - e.started_ns) / 1e6);
    }
    size_t next = 0;
    auto read_sizes = [&](const c10::SmallVector<int64_t, 4>& dims) {
      auto sizes = new_list();
      for (int64_t rank : dims) {
        auto shape = new_list();
        for (int64_t d = 0; d < rank; ++d) shape.push_back(e.sizes[next++]);
        sizes.push_back(shape);
      }
      return sizes;
    };
    auto dtype_names = [](const c10::SmallVector<c10::ScalarType, 4>& dtypes) {
      std::vector<std::string> names;
      for (auto dtype : dtypes) names.emplace_back(c10::toString(dtype));
      return names;
    };
    dict.insert(c10d::input_sizes_key, read_sizes(e.input_dims));
    dict.insert(c10d::input_dtypes_key, dtype_names(e.input_dtypes));
    dict.insert(c10d::output_sizes_key, read_sizes(e.output_dims));
    dict.insert(c10d::output_dtypes_key, dtype_names(e.output_dtypes));
    dict.insert(c10d::state_key, e.completed_ns != 0 ? c10d::completed_state
                                 : e.started_ns != 0 ? c10d::started_state
                                                     : c10d::scheduled_state);
    dict.insert(c10d::time_discovered_started_key,
                e.started_ns != 0 ? c10::IValue(unix_ns(e.started_ns)) : c10::IValue());
    dict.insert(c10d::time_discovered_completed_key,
                e.completed_ns != 0 ? c10::IValue(unix_ns(e.completed_ns)) : c10::IValue());
    dict.insert(c10d::retired_key, e.retired);
    dict.insert(c10d::timeout_key, static_cast<int64_t>(e.op.timeout.count()));
    dict.insert(c10d::is_p2p_key, e.op.p2p);
    dict.insert(c10d::frames_key, new_list());
    entries.push_back(dict);
  }
  auto pg_config = new_dict();
  auto pg_status = new_dict();
  for (size_t g = 0; g < groups.size(); ++g) {
    const Group& group = groups[g];
    auto info = new_dict();
    info.insert("name", group.name);
    info.insert("desc", group.desc);
    info.insert("ranks", ranks_text(group.ranks));
    pg_config.insert(group.name, info);
    auto status_dict = new_dict();
    status_dict.insert("last_enqueued_collective", status[g][0]);
    status_dict.insert("last_started_collective", status[g][1]);
    status_dict.insert("last_completed_collective", status[g][2]);
    pg_status.insert(group.name, status_dict);
  }
  auto result = new_dict();
  result.insert(c10d::version_key, c10d::version_val);
  result.insert(c10d::comm_lib_version_key, std::string("domino"));
  result.insert(c10d::pg_config_key, pg_config);
  result.insert(c10d::pg_status_key, pg_status);
  result.insert(c10d::entries_key, entries);
  return c10d::pickle_str(result);
}

std::optional<std::string> FlightRecorder::dump_to_file(int64_t global_rank) {
  if (capacity_ == 0) return std::nullopt;
  const std::string path = dump_prefix_ + std::to_string(global_rank);
  // Written beside it under a name fr_trace does not read, then renamed: never half a dump.
  const auto slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string partial = folder + "/.domino-dump-in-progress-" + std::to_string(global_rank);
  make_parents(path);
  const std::string bytes = dump();
  {
    // Created afresh, never through a link someone left under that name (a shared /tmp prefix):
    // a stale file of an earlier crash goes first, and O_EXCL | O_NOFOLLOW refuse anything else.
    ::unlink(partial.c_str());
    const int fd =
        ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int error = fd < 0 ? errno : 0;
    size_t written = 0;
    while (error == 0 && written < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = n < 0 ? errno : EIO;
        break;
      }
      written += static_cast<size_t>(n);
    }
    if (fd >= 0 && ::close(fd) != 0 && error == 0) error = errno;
    if (error != 0) {
      if (fd >= 0) ::unlink(partial.c_str());
      log_line(LogLevel::kWarn, static_cast<int>(global_rank),
               "Flight Recorder: could not write " + partial + ": " + std::strerror(error) +
                   " (set TORCH_FR_DUMP_TEMP_FILE to a writable path prefix)");
      return std::nullopt;
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    log_line(LogLevel::kWarn, static_cast<int>(global_rank),
             "Flight Recorder: could not write " + path + ": " + std::strerror(errno));
    return std::nullopt;
  }
  log_line(LogLevel::kWarn, static_cast<int>(global_rank),
           "Flight Recorder: dumped " + std::to_string(bytes.size()) + " bytes to " + path +
               " (python -m torch.distributed.flight_recorder.fr_trace -p " +
               dump_prefix_.substr(slash == std::string::npos ? 0 : slash + 1) + " " + folder +
               ")");
  return path;
}

namespace {
// The job's own store: requests go under no group's prefix, so every rank's watcher sees them.
c10::intrusive_ptr<c10d::Store> job_store(c10::intrusive_ptr<c10d::Store> store) {
  while (auto* prefixed = dynamic_cast<c10d::PrefixStore*>(store.get())) {
    store = prefixed->getUnderlyingStore();
  }
  return store;
}
}  // namespace

// c10d's store as the dump handshake uses it.
class C10dRequestStore final : public RequestStore {
 public:
  explicit C10dRequestStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  bool claim(const std::string& key, const std::string& value) override {
    const std::vector<uint8_t> desired(value.begin(), value.end());
    return store_->compareSet(key, {}, desired) == desired;
  }
  void set(const std::string& key, const std::string& value) override {
    store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
  }
  void append(const std::string& key, const std::string& value) override {
    store_->append(key, std::vector<uint8_t>(value.begin(), value.end()));
  }
  std::optional<std::string> find(const std::string& key) override {
    if (!store_->check({key})) return std::nullopt;
    const auto value = store_->get(key);
    return std::string(value.begin(), value.end());
  }
  bool wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    try {
      store_->wait(keys, timeout);
      return true;
    } catch (const std::exception&) {
      // Stores throw different types for a timeout and for a lost connection; one that still
      // answers timed out.
      (void)store_->check(keys);
      return false;
    }
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

// A connection of the store's own where it can make one: the group's may sit in a long wait
// on another thread. Its calls give up after wait (at least a second), so that a store that
// went away delays a failing op's error by about that, not by the store's own timeout.
c10::intrusive_ptr<c10d::Store> own_connection(const c10::intrusive_ptr<c10d::Store>& store,
                                               std::chrono::milliseconds wait) {
  try {
    auto connection = store->clone();
    connection->setTimeout(std::max(wait, std::chrono::milliseconds(1000)));
    return connection;
  } catch (const std::exception&) {
    return store;  // an in-process store, safe to share
  }
}

void FlightRecorder::on_failure(int64_t global_rank, const std::vector<int64_t>& group_ranks,
                                const std::string& what, std::chrono::milliseconds wait) {
  if (capacity_ == 0) return;
  const int64_t now_ms = now_ns() / 1000000;
  int64_t last = last_dump_ms_.load();
  // A failure fails every op queued behind it: one dump for all of them.
  const bool fresh = now_ms - last >= 1000 && last_dump_ms_.compare_exchange_strong(last, now_ms);
  DumpHandshake* handshake = nullptr;
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    if (handshake_ != nullptr && handshake_->watching()) handshake = handshake_;
  }
  if (handshake == nullptr) {
    // No watcher (the store failed when the group was made): this rank still dumps its own.
    if (fresh) dump_for(global_rank, /*answering=*/false);
    return;
  }
  const std::string request = "rank " + std::to_string(global_rank) + " at " +
                              std::to_string(now_ms) + ": " + what.substr(0, 200);
  const auto missing = handshake->on_failure(fresh, group_ranks, request, wait);
  if (!missing.empty()) {
    std::string ranks;
    for (const int64_t rank : missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    log_line(LogLevel::kWarn, static_cast<int>(global_rank),
             "Flight Recorder: ranks " + ranks + " did not confirm their dumps within " +
                 std::to_string(wait.count()) +
                 " ms; fr_trace may lack them (DOMINO_FR_DUMP_WAIT_MS sets the wait)");
  }
}

bool FlightRecorder::dump_for(int64_t global_rank, bool answering) {
  std::lock_guard<std::mutex> lock(dump_mutex_);
  const int64_t now_ms = now_ns() / 1000000;
  // One written within the last second (this rank's own failure, a request a moment earlier)
  // already holds what a new one would.
  if (answering && now_ms - last_written_ms_ < 1000) return true;
  if (answering) last_dump_ms_.store(now_ms);
  bool written = false;
  try {
    written = dump_to_file(global_rank).has_value();
  } catch (const std::exception& e) {
    log_line(LogLevel::kWarn, static_cast<int>(global_rank),
             std::string("Flight Recorder: the dump failed: ") + e.what());
  }
  if (written) last_written_ms_ = now_ms;
  return written;
}

void FlightRecorder::watch(const void* group, const c10::intrusive_ptr<c10d::Store>& store,
                           int64_t global_rank, std::chrono::milliseconds wait) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(watch_mutex_);
  const auto job = job_store(store);
  live_stores_.emplace_back(group, job);
  if (handshake_ != nullptr && handshake_->watching()) return;
  // A pending request keeps a live group's store (and a server this process hosts) up; once
  // every group is gone, nothing holds it.
  auto pin = [this]() -> std::shared_ptr<void> {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    if (live_stores_.empty()) return nullptr;
    return std::make_shared<c10::intrusive_ptr<c10d::Store>>(live_stores_.front().second);
  };
  auto handshake = std::make_unique<DumpHandshake>(
      global_rank, std::make_unique<C10dRequestStore>(own_connection(job, wait)),
      std::make_unique<C10dRequestStore>(own_connection(job, wait)),
      [this, global_rank](bool answering) { return dump_for(global_rank, answering); },
      std::move(pin));
  try {
    handshake->start(wait);
  } catch (const std::exception& e) {
    log_line(
        LogLevel::kWarn, static_cast<int>(global_rank),
        std::string("Flight Recorder: cannot watch for other ranks' dump requests: ") + e.what());
    return;
  }
  // A handshake that stopped (its store went away) stays allocated: its thread may still read it.
  handshake_ = handshake.release();
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit(&FlightRecorder::finish_at_exit); });
}

void FlightRecorder::unwatch(const void* group) {
  std::lock_guard<std::mutex> lock(watch_mutex_);
  std::erase_if(live_stores_, [group](const auto& entry) { return entry.first == group; });
}

void FlightRecorder::finish_at_exit() {
  FlightRecorder& recorder = get();
  DumpHandshake* handshake = nullptr;
  {
    std::lock_guard<std::mutex> lock(recorder.watch_mutex_);
    handshake = recorder.handshake_;
  }
  if (handshake != nullptr) handshake->finish();
}

}  // namespace domino
