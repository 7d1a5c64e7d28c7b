// The Flight Recorder's dump handshake between ranks, through the job's store: a rank whose op
// failed posts a request, dumps its own buffer, and waits (bounded) until every rank of its
// group that records has acknowledged that its dump is on disk; only then does its error reach
// its caller. Every other rank's watcher waits on the store for the next request (no polling),
// dumps and acknowledges. Torch-free: FlightRecorder.cpp adapts c10d's store to RequestStore.
//
// Keys, under the job's store with no group prefix:
//   domino/flight_recorder/watching           "<rank>," appended by every rank that records
//   domino/flight_recorder/request/<n>        "<from>;<awaited ranks, comma-separated>;<what>",
//                                             claimed atomically, so numbers have no gaps
//   domino/flight_recorder/ack/<n>/<rank>     "dumped" or "failed", once <rank> has tried
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace domino {

// The store calls the handshake needs. Each connection serves one thread at a time.
class RequestStore {
 public:
  virtual ~RequestStore() = default;
  // Writes value under key unless key is set; true when this call wrote it.
  virtual bool claim(const std::string& key, const std::string& value) = 0;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual void append(const std::string& key, const std::string& value) = 0;
  virtual std::optional<std::string> find(const std::string& key) = 0;
  // True once every key is set; false when timeout passes first; throws when the store is gone.
  virtual bool wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

struct DumpRequest {
  uint64_t number = 0;
  int64_t from = -1;
  std::vector<int64_t> awaited;  // the ranks whose acknowledgements the requester waits for
  std::string what;
};

// Request records as the store holds them.
std::string encode_request(const DumpRequest& request);
// nullopt for a record that is not one (a peer of another version, a damaged value).
std::optional<DumpRequest> decode_request(uint64_t number, const std::string& record);

class DumpHandshake {
 public:
  // Writes this rank's dump; answering a request, it may instead find one written within the
  // last second. True when a dump is on disk.
  using DumpFn = std::function<bool(bool answering)>;
  // Keeps the job's store alive while a request is pending, in case this process hosts it.
  using PinFn = std::function<std::shared_ptr<void>()>;

  // caller: the connection failing ops use; watcher: the watching thread's own. A started
  // handshake is never destroyed: its thread may sit in a store wait until the process ends.
  DumpHandshake(int64_t rank, std::unique_ptr<RequestStore> caller,
                std::unique_ptr<RequestStore> watcher, DumpFn dump, PinFn pin);
  DumpHandshake(const DumpHandshake&) = delete;
  DumpHandshake& operator=(const DumpHandshake&) = delete;

  // Announces this rank as one that dumps, and starts watching for requests made from now on.
  void start(std::chrono::milliseconds wait);
  bool watching() const;

  // A failed op on a group of group_ranks: dumps, asks every rank to dump, and waits up to wait
  // for the acknowledgements of the group's recording ranks. post false (this rank dumped
  // within the last second): it waits for the request it last made or answered instead, its
  // own answer included. One failure at a time: a second lane's waits for the first's. Returns
  // the awaited ranks that did not acknowledge; later failures no longer wait for them.
  std::vector<int64_t> on_failure(bool post, const std::vector<int64_t>& group_ranks,
                                  const std::string& what, std::chrono::milliseconds wait);

  // At process exit: waits, until its deadline, for a request this process has seen and whose
  // acknowledgements may still come, so that a process hosting the store keeps serving it.
  void finish();

  static std::string request_key(uint64_t number);
  static std::string ack_key(uint64_t number, int64_t rank);
  static std::string watching_key();

 private:
  struct Pending {
    DumpRequest request;
    std::chrono::steady_clock::time_point seen;
    std::chrono::steady_clock::time_point deadline;
    std::shared_ptr<void> pinned_store;
  };
  void watch_loop();
  void answer(const DumpRequest& request);
  std::optional<DumpRequest> post(const std::vector<int64_t>& group_ranks, const std::string& what,
                                  bool dumped);
  std::vector<int64_t> await_acks(const DumpRequest& request,
                                  std::chrono::steady_clock::time_point deadline,
                                  bool include_self);
  std::vector<int64_t> watching_ranks(const std::vector<int64_t>& ranks);

  const int64_t rank_;
  std::unique_ptr<RequestStore> caller_;  // guarded by caller_mutex_
  std::unique_ptr<RequestStore> watcher_;
  DumpFn dump_;
  PinFn pin_;
  std::mutex caller_mutex_;
  std::mutex failure_mutex_;  // one on_failure at a time

  mutable std::mutex mutex_;
  bool watching_ = false;
  uint64_t next_number_ = 1;  // the first request number not yet seen
  std::chrono::milliseconds wait_{0};
  std::optional<Pending> pending_;  // the newest request made or seen
  std::vector<int64_t> silent_;     // ranks that missed an acknowledgement: not awaited again
  bool exiting_ = false;            // finish() ran: static destructors may follow
};

}  // namespace domino
