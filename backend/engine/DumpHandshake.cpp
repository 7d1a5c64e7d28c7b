#include "DumpHandshake.h"

#include <pthread.h>

#include <algorithm>
#include <exception>
#include <thread>

#include "config/Log.h"

namespace domino {

namespace {
using Clock = std::chrono::steady_clock;

// The watcher's wait when nothing is pending: long, since a request wakes it at once.
constexpr std::chrono::milliseconds kIdleWait = std::chrono::hours(24);

std::string ranks_list(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out;
}

std::optional<int64_t> parse_rank(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

int log_rank(int64_t rank) {
  return static_cast<int>(rank);
}
}  // namespace

std::string encode_request(const DumpRequest& request) {
  return std::to_string(request.from) + ";" + ranks_list(request.awaited) + ";" + request.what;
}

std::optional<DumpRequest> decode_request(uint64_t number, const std::string& record) {
  const size_t first = record.find(';');
  if (first == std::string::npos) return std::nullopt;
  const size_t second = record.find(';', first + 1);
  if (second == std::string::npos) return std::nullopt;
  DumpRequest request;
  request.number = number;
  const auto from = parse_rank(record.substr(0, first));
  if (!from) return std::nullopt;
  request.from = *from;
  const std::string awaited = record.substr(first + 1, second - first - 1);
  for (size_t at = 0; at < awaited.size();) {
    const size_t comma = std::min(awaited.find(',', at), awaited.size());
    const auto rank = parse_rank(awaited.substr(at, comma - at));
    if (!rank) return std::nullopt;
    request.awaited.push_back(*rank);
    at = comma + 1;
  }
  request.what = record.substr(second + 1);
  return request;
}

std::string DumpHandshake::request_key(uint64_t number) {
  return "domino/flight_recorder/request/" + std::to_string(number);
}
std::string DumpHandshake::ack_key(uint64_t number, int64_t rank) {
  return "domino/flight_recorder/ack/" + std::to_string(number) + "/" + std::to_string(rank);
}
std::string DumpHandshake::watching_key() {
  return "domino/flight_recorder/watching";
}

DumpHandshake::DumpHandshake(int64_t rank, std::unique_ptr<RequestStore> caller,
                             std::unique_ptr<RequestStore> watcher, DumpFn dump, PinFn pin)
    : rank_(rank),
      caller_(std::move(caller)),
      watcher_(std::move(watcher)),
      dump_(std::move(dump)),
      pin_(std::move(pin)) {}

void DumpHandshake::start(std::chrono::milliseconds wait) {
  uint64_t first = 1;
  {
    std::lock_guard<std::mutex> caller(caller_mutex_);
    // Requests already in the store are an earlier incarnation's (torchrun's agent keeps its
    // store across restarts): watch from the first number after them. Announced after the
    // scan, so that no request that awaits this rank falls between the two.
    while (caller_->find(request_key(first))) ++first;
    caller_->append(watching_key(), std::to_string(rank_) + ",");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    next_number_ = first;
    wait_ = wait;
    watching_ = true;
  }
  std::thread([this] { watch_loop(); }).detach();
}

bool DumpHandshake::watching() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return watching_;
}

void DumpHandshake::watch_loop() {
  pthread_setname_np(pthread_self(), "domino-fr-watch");
  for (;;) {
    uint64_t number = 0;
    std::chrono::milliseconds timeout = kIdleWait;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      number = next_number_;
      if (pending_) {
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(pending_->deadline - Clock::now());
        timeout = std::max(std::chrono::milliseconds(1), left);
      }
    }
    std::optional<std::string> record;
    try {
      if (watcher_->wait({request_key(number)}, timeout))
        record = watcher_->find(request_key(number));
    } catch (const std::exception&) {
      // The job's store is gone: the job is ending. A later group starts a new watcher.
      std::lock_guard<std::mutex> lock(mutex_);
      watching_ = false;
      return;
    }
    if (!record) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (pending_ && Clock::now() >= pending_->deadline) pending_.reset();  // unpins the store
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      next_number_ = number + 1;
    }
    const auto request = decode_request(number, *record);
    if (!request) {
      log_line(LogLevel::kWarn, log_rank(rank_),
               "Flight Recorder: ignored dump request " + std::to_string(number) +
                   ", which is not in this version's form: '" + record->substr(0, 200) + "'");
      continue;
    }
    if (request->from == rank_) continue;  // our own: on_failure dumped and acknowledged it
    try {
      answer(*request);
    } catch (const std::exception& e) {
      log_line(LogLevel::kWarn, log_rank(rank_),
               std::string("Flight Recorder: could not acknowledge a dump request: ") + e.what());
    }
  }
}

void DumpHandshake::answer(const DumpRequest& request) {
  log_line(LogLevel::kWarn, log_rank(rank_),
           "Flight Recorder: rank " + std::to_string(request.from) + " asked for a dump (" +
               request.what.substr(0, 300) + ")");
  std::shared_ptr<void> pinned = pin_ ? pin_() : nullptr;  // before mutex_: pin_ takes its own
  {
    // Pending from the moment it is seen: a failure of this rank's own, or its exit, now waits
    // for the ranks this request awaits.
    std::lock_guard<std::mutex> lock(mutex_);
    if (exiting_) return;
    const auto now = Clock::now();
    if (!pending_ || pending_->request.number < request.number) {
      pending_ = Pending{request, now, now + wait_, std::move(pinned)};
    }
  }
  const bool dumped = dump_(/*answering=*/true);
  watcher_->set(ack_key(request.number, rank_), dumped ? "dumped" : "failed");
}

std::vector<int64_t> DumpHandshake::watching_ranks(const std::vector<int64_t>& ranks) {
  std::optional<std::string> list;
  {
    std::lock_guard<std::mutex> caller(caller_mutex_);
    list = caller_->find(watching_key());
  }
  std::vector<int64_t> announced;
  for (size_t at = 0; list && at < list->size();) {
    const size_t comma = std::min(list->find(',', at), list->size());
    if (const auto rank = parse_rank(list->substr(at, comma - at))) announced.push_back(*rank);
    at = comma + 1;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> watching;
  for (const int64_t rank : ranks) {
    const bool known =
        rank == rank_ || std::find(announced.begin(), announced.end(), rank) != announced.end();
    const bool silent = std::find(silent_.begin(), silent_.end(), rank) != silent_.end();
    if (known && !silent) watching.push_back(rank);
  }
  return watching;
}

std::optional<DumpRequest> DumpHandshake::post(const std::vector<int64_t>& group_ranks,
                                               const std::string& what, bool dumped) {
  DumpRequest request;
  request.from = rank_;
  request.what = what;
  try {
    request.awaited = watching_ranks(group_ranks);
    {
      // A request another rank made a moment ago that awaits this whole group already covers
      // this failure: when every rank of a group times out together, one request, not N.
      std::lock_guard<std::mutex> lock(mutex_);
      if (pending_ && Clock::now() - pending_->seen < std::chrono::seconds(1)) {
        const auto& covered = pending_->request.awaited;
        const bool covers =
            std::all_of(request.awaited.begin(), request.awaited.end(), [&](int64_t r) {
              return std::find(covered.begin(), covered.end(), r) != covered.end();
            });
        if (covers) return pending_->request;
      }
    }
    const std::string record = encode_request(request);
    uint64_t number = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      number = next_number_;
    }
    std::lock_guard<std::mutex> caller(caller_mutex_);
    // Another rank may have claimed the number first: the next free one is ours.
    while (!caller_->claim(request_key(number), record)) ++number;
    request.number = number;
    caller_->set(ack_key(number, rank_), dumped ? "dumped" : "failed");
  } catch (const std::exception& e) {
    log_line(
        LogLevel::kWarn, log_rank(rank_),
        std::string("Flight Recorder: could not ask the other ranks for their dumps: ") + e.what());
    return std::nullopt;
  }
  return request;
}

std::vector<int64_t> DumpHandshake::on_failure(bool post_request,
                                               const std::vector<int64_t>& group_ranks,
                                               const std::string& what,
                                               std::chrono::milliseconds wait) {
  std::lock_guard<std::mutex> failing(failure_mutex_);
  const auto deadline = Clock::now() + wait;
  std::optional<DumpRequest> awaited;
  bool include_self = false;
  if (post_request) {
    // This rank's own dump first: the store may be what failed, and then no call on it is fast.
    const bool dumped = dump_(/*answering=*/false);
    awaited = post(group_ranks, what, dumped);
    if (!awaited) return {};
    std::shared_ptr<void> pinned = pin_ ? pin_() : nullptr;  // before mutex_
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pending_ || pending_->request.number < awaited->number) {
      pending_ = Pending{*awaited, Clock::now(), deadline, std::move(pinned)};
    }
    // A request of another rank's that this one answered: its own answer may still be writing.
    include_self = awaited->from != rank_;
  } else {
    // Dumped within the last second, for a failure of its own or at another rank's request:
    // this error too waits until the ranks that request awaited, this one included, dumped.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pending_ || Clock::now() >= pending_->deadline) return {};
    awaited = pending_->request;
    include_self = true;
  }
  if (wait.count() == 0) return {};
  std::vector<int64_t> missing = await_acks(*awaited, deadline, include_self);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const int64_t rank : missing) {
    if (rank != rank_ && std::find(silent_.begin(), silent_.end(), rank) == silent_.end()) {
      silent_.push_back(rank);
    }
  }
  if (pending_ && pending_->request.number == awaited->number &&
      (missing.empty() || Clock::now() >= pending_->deadline)) {
    pending_.reset();
  }
  return missing;
}

std::vector<int64_t> DumpHandshake::await_acks(const DumpRequest& request,
                                               Clock::time_point deadline, bool include_self) {
  std::vector<std::string> keys;
  std::vector<int64_t> ranks;
  for (const int64_t rank : request.awaited) {
    if (rank == rank_ && !include_self) continue;
    keys.push_back(ack_key(request.number, rank));
    ranks.push_back(rank);
  }
  if (keys.empty()) return {};
  std::lock_guard<std::mutex> caller(caller_mutex_);
  try {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (caller_->wait(keys, std::max(std::chrono::milliseconds(1), left))) return {};
    std::vector<int64_t> missing;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!caller_->find(keys[i])) missing.push_back(ranks[i]);
    }
    return missing;
  } catch (const std::exception&) {
    return ranks;  // the store is gone: no acknowledgement can come
  }
}

void DumpHandshake::finish() {
  std::optional<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exiting_ = true;  // the watcher dumps no more: static destructors may run next
    pending.swap(pending_);
  }
  if (!pending || Clock::now() >= pending->deadline) return;
  const auto missing = await_acks(pending->request, pending->deadline, /*include_self=*/true);
  if (!missing.empty()) {
    log_line(LogLevel::kWarn, log_rank(rank_),
             "Flight Recorder: at exit, ranks " + ranks_list(missing) +
                 " had not acknowledged dump request " + std::to_string(pending->request.number));
  }
}

}  // namespace domino
