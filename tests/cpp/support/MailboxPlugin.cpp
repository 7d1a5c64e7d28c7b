// A transport with no collectives at all, only the ABI's links (and comm_create/destroy): ranks
// are threads of one process that share a mailbox per group. It proves that a plugin which only
// moves messages between pairs runs every collective through the backend's shared algorithms.
// Sends are buffered (copied at once); link_wait fills the posted receives in order.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "domino/plugin.h"

namespace {

struct Mailbox {
  std::mutex mutex;
  std::condition_variable arrived;
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> queues;  // (from, to)
  int members = 0;
};

std::mutex g_mutex;
std::map<std::string, std::shared_ptr<Mailbox>> g_boxes;

struct PostedReceive {
  int peer;
  void* data;
  size_t bytes;
};

}  // namespace

struct domino_comm {
  int rank, size;
  int64_t timeout_ms;
  std::string group;
  std::shared_ptr<Mailbox> box;
  std::vector<PostedReceive> posted;
};

namespace {

int create(const domino_comm_config_t* config, domino_comm_t** out, char*, size_t) {
  auto* c = new domino_comm{config->rank,
                            config->size,
                            config->timeout_ms,
                            config->group_name != nullptr ? config->group_name : "",
                            nullptr,
                            {}};
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& box = g_boxes[c->group];
  if (!box) box = std::make_shared<Mailbox>();
  box->members++;
  c->box = box;
  *out = c;
  return DOMINO_OK;
}

void destroy(domino_comm_t* c) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (--c->box->members == 0) g_boxes.erase(c->group);
  }
  delete c;
}

int link_send(domino_comm_t* c, const void* data, size_t bytes, int32_t peer, char*, size_t) {
  const char* p = static_cast<const char*>(data);
  std::lock_guard<std::mutex> lock(c->box->mutex);
  c->box->queues[{c->rank, peer}].emplace_back(p, p + bytes);
  c->box->arrived.notify_all();
  return DOMINO_OK;
}

int link_recv(domino_comm_t* c, void* data, size_t bytes, int32_t peer, char*, size_t) {
  c->posted.push_back({peer, data, bytes});
  return DOMINO_OK;
}

int link_wait(domino_comm_t* c, char* err, size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(c->timeout_ms);
  std::unique_lock<std::mutex> lock(c->box->mutex);
  int status = DOMINO_OK;
  for (const PostedReceive& r : c->posted) {
    auto& queue = c->box->queues[{r.peer, c->rank}];
    if (!c->box->arrived.wait_until(lock, deadline, [&] { return !queue.empty(); })) {
      std::snprintf(err, n, "mailbox: rank %d sent nothing to rank %d within %lld ms", r.peer,
                    c->rank, static_cast<long long>(c->timeout_ms));
      status = DOMINO_ERR_TIMEOUT;
      break;
    }
    if (queue.front().size() != r.bytes) {
      std::snprintf(err, n, "mailbox: rank %d sent %zu bytes where rank %d expected %zu", r.peer,
                    queue.front().size(), c->rank, r.bytes);
      status = DOMINO_ERR_PEER;  // the streams are out of step: broken (the ABI)
      break;
    }
    if (r.bytes > 0) std::memcpy(r.data, queue.front().data(), r.bytes);
    queue.pop_front();
  }
  c->posted.clear();
  return status;
}

#ifndef MAILBOX_ABI
#define MAILBOX_ABI DOMINO_PLUGIN_ABI_VERSION
#define MAILBOX_NAME "mailbox"
#endif

#if MAILBOX_ABI < 6
// Past an ABI 5 table's end: a loader that read it would run this and fail the call.
int past_the_table(domino_comm_t*, const domino_buffer_t*, domino_buffer_t*, domino_redop_t,
                   const char*, char* err, size_t n) {
  std::snprintf(err, n, "the loader read allreduce_with past an ABI %d table", MAILBOX_ABI);
  return DOMINO_ERR_SYSTEM;
}
#endif

domino_plugin_t make_table() {
  domino_plugin_t table{};
  table.abi_version = MAILBOX_ABI;
  table.name = MAILBOX_NAME;
  table.devices = DOMINO_DEVICE_CPU;
  table.comm_create = create;
  table.comm_destroy = destroy;
  table.link_send = link_send;
  table.link_recv = link_recv;
  table.link_wait = link_wait;
#if MAILBOX_ABI < 6
  table.allreduce_with = past_the_table;
#endif
  return table;
}

const domino_plugin_t kMailbox = make_table();

}  // namespace

extern "C" __attribute__((visibility("default"))) const domino_plugin_t* domino_plugin_init(
    uint32_t abi_version) {
  return abi_version == MAILBOX_ABI ? &kMailbox : nullptr;
}
