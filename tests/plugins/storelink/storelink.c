/* "storelink": a transport that moves data through the group's rendezvous store. Slow, but it
 * reaches every rank the store reaches, so the backend can route inter-host traffic to it. It
 * exists to prove the plugin interface: built outside the main build, loaded from
 * DOMINO_PLUGIN_PATH, chosen with DOMINO_INTER_TRANSPORT=storelink. Its own all-reduce,
 * all-gather, broadcast and barrier publish every rank's buffer under a per-call key and read
 * everyone's, reducing in rank order, so all ranks hold identical results. Reduce, reduce-scatter,
 * gather, scatter and all-to-all it does not write: it offers the ABI's links (one key per
 * message), and the backend runs its shared algorithms over them. STORELINK_TRACE=1 prints each
 * call on stderr. */
#include <domino/plugin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct domino_comm {
  int rank, size;
  int64_t timeout_ms;
  uint64_t calls;
  char group[128];
  const domino_bootstrap_t* store;
  /* Links: messages sent to and received from each peer so far, and the receives posted. */
  uint64_t* sent;
  uint64_t* received;
  struct posted_receive {
    int peer;
    void* data;
    size_t bytes;
  } * posted;
  size_t n_posted, posted_capacity;
};

static size_t element_size(domino_dtype_t t) {
  switch (t) {
    case DOMINO_FLOAT64:
    case DOMINO_INT64:
      return 8;
    case DOMINO_FLOAT32:
    case DOMINO_INT32:
      return 4;
    case DOMINO_FLOAT16:
    case DOMINO_BFLOAT16:
      return 2;
    default:
      return 1;
  }
}

static int fail(char* err, size_t n, int status, const char* what, const char* detail) {
  snprintf(err, n, "storelink %s: %s", what, detail);
  return status;
}

static void trace(domino_comm_t* c, const char* op) {
  const char* on = getenv("STORELINK_TRACE");
  if (on && on[0] == '1')
    fprintf(stderr, "storelink %s on %s rank %d of %d\n", op, c->group, c->rank, c->size);
}

/* Publishes mine under this call's key, then fetches rank r's into out (r may be this rank). */
static int publish(domino_comm_t* c, const void* data, size_t bytes, char* err, size_t n) {
  char key[96];
  snprintf(key, sizeof key, "storelink/%llu/%d", (unsigned long long)c->calls, c->rank);
  return c->store->set(c->store->context, key, data, bytes, err, n);
}
static int fetch(domino_comm_t* c, int r, void* out, size_t bytes, char* err, size_t n) {
  char key[96];
  size_t got = 0;
  snprintf(key, sizeof key, "storelink/%llu/%d", (unsigned long long)c->calls, r);
  if (c->store->get(c->store->context, key, out, bytes, &got,
                    __atomic_load_n(&c->timeout_ms, __ATOMIC_RELAXED), err, n) != 0)
    return DOMINO_ERR_TIMEOUT;
  if (got != bytes) return fail(err, n, DOMINO_ERR_MISMATCH, "fetch", "ranks disagree on the size");
  return DOMINO_OK;
}

#define COMBINE(T)                                          \
  for (size_t i = 0; i < count; ++i) {                      \
    T a = ((T*)acc)[i], b = ((const T*)in)[i];              \
    ((T*)acc)[i] = op == DOMINO_MAX       ? (a > b ? a : b) \
                   : op == DOMINO_MIN     ? (a < b ? a : b) \
                   : op == DOMINO_PRODUCT ? (T)(a * b)      \
                                          : (T)(a + b);     \
  }

static int combine(void* acc, const void* in, size_t count, domino_dtype_t t, domino_redop_t op) {
  switch (t) {
    case DOMINO_FLOAT32:
      COMBINE(float);
      break;
    case DOMINO_FLOAT64:
      COMBINE(double);
      break;
    case DOMINO_INT32:
      COMBINE(int32_t);
      break;
    case DOMINO_INT64:
      COMBINE(int64_t);
      break;
    case DOMINO_INT8:
      COMBINE(int8_t);
      break;
    case DOMINO_UINT8:
    case DOMINO_BOOL:
      COMBINE(uint8_t);
      break;
    default:
      return 0;
  }
  return 1;
}

static int create(const domino_comm_config_t* config, domino_comm_t** out, char* err, size_t n) {
  domino_comm_t* c = calloc(1, sizeof *c);
  if (!c) return fail(err, n, DOMINO_ERR_SYSTEM, "create", "out of memory");
  c->rank = config->rank;
  c->size = config->size;
  c->timeout_ms = config->timeout_ms;
  c->store = config->bootstrap;
  snprintf(c->group, sizeof c->group, "%s", config->group_name ? config->group_name : "?");
  c->sent = calloc((size_t)c->size, sizeof *c->sent);
  c->received = calloc((size_t)c->size, sizeof *c->received);
  if (!c->sent || !c->received) {
    free(c->sent);
    free(c->received);
    free(c);
    return fail(err, n, DOMINO_ERR_SYSTEM, "create", "out of memory");
  }
  *out = c;
  return DOMINO_OK;
}

static void destroy(domino_comm_t* c) {
  free(c->sent);
  free(c->received);
  free(c->posted);
  free(c);
}

static int allreduce(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                     domino_redop_t op, char* err, size_t n) {
  trace(c, "allreduce");
  if (op != DOMINO_SUM && op != DOMINO_MAX && op != DOMINO_MIN && op != DOMINO_PRODUCT)
    return fail(err, n, DOMINO_ERR_UNSUPPORTED, "allreduce", "only SUM, PRODUCT, MIN and MAX");
  const size_t bytes = send->count * element_size(send->dtype);
  char* acc = malloc(bytes + 1);
  char* in = malloc(bytes + 1);
  int status = publish(c, send->ptr, bytes, err, n);
  for (int r = 0; status == DOMINO_OK && r < c->size; ++r) {
    status = fetch(c, r, r == 0 ? acc : in, bytes, err, n);
    if (status == DOMINO_OK && r > 0 && !combine(acc, in, send->count, send->dtype, op))
      status = fail(err, n, DOMINO_ERR_UNSUPPORTED, "allreduce", "16-bit floats are not supported");
  }
  if (status == DOMINO_OK && bytes) memcpy(recv->ptr, acc, bytes);
  free(acc);
  free(in);
  c->calls++;
  return status;
}

static int allgather(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                     char* err, size_t n) {
  trace(c, "allgather");
  const size_t bytes = send->count * element_size(send->dtype);
  int status = publish(c, send->ptr, bytes, err, n);
  for (int r = 0; status == DOMINO_OK && r < c->size; ++r)
    status = fetch(c, r, (char*)recv->ptr + (size_t)r * bytes, bytes, err, n);
  c->calls++;
  return status;
}

static int barrier(domino_comm_t* c, char* err, size_t n) {
  domino_buffer_t none = {NULL, 0, DOMINO_UINT8, -1};
  trace(c, "barrier");
  return allgather(c, &none, &none, err, n);
}

static int broadcast(domino_comm_t* c, domino_buffer_t* buffer, int32_t root, char* err, size_t n) {
  trace(c, "broadcast");
  const size_t bytes = buffer->count * element_size(buffer->dtype);
  int status = c->rank == root ? publish(c, buffer->ptr, bytes, err, n) : DOMINO_OK;
  if (status == DOMINO_OK && c->rank != root) status = fetch(c, root, buffer->ptr, bytes, err, n);
  c->calls++;
  return status;
}

/* Links: message k from rank a to rank b lives under storelink/link/a/b/k. */
static void link_key(char* key, size_t size, int from, int to, uint64_t k) {
  snprintf(key, size, "storelink/link/%d/%d/%llu", from, to, (unsigned long long)k);
}

static int link_send(domino_comm_t* c, const void* data, size_t bytes, int32_t peer, char* err,
                     size_t n) {
  char key[96];
  trace(c, "link_send");
  link_key(key, sizeof key, c->rank, peer, c->sent[peer]++);
  if (c->store->set(c->store->context, key, data, bytes, err, n) == 0) return DOMINO_OK;
  c->n_posted = 0; /* the ABI: a failed link call drops what was posted */
  return DOMINO_ERR_PEER;
}

static int link_recv(domino_comm_t* c, void* data, size_t bytes, int32_t peer, char* err,
                     size_t n) {
  if (c->n_posted == c->posted_capacity) {
    size_t capacity = c->posted_capacity ? 2 * c->posted_capacity : 16;
    void* grown = realloc(c->posted, capacity * sizeof *c->posted);
    if (!grown) return fail(err, n, DOMINO_ERR_SYSTEM, "link_recv", "out of memory");
    c->posted = grown;
    c->posted_capacity = capacity;
  }
  c->posted[c->n_posted].peer = peer;
  c->posted[c->n_posted].data = data;
  c->posted[c->n_posted].bytes = bytes;
  c->n_posted++;
  return DOMINO_OK;
}

static int link_wait(domino_comm_t* c, char* err, size_t n) {
  int status = DOMINO_OK;
  for (size_t i = 0; status == DOMINO_OK && i < c->n_posted; ++i) {
    const int peer = c->posted[i].peer;
    char key[96];
    size_t got = 0;
    link_key(key, sizeof key, peer, c->rank, c->received[peer]++);
    if (c->store->get(c->store->context, key, c->posted[i].data, c->posted[i].bytes, &got,
                      __atomic_load_n(&c->timeout_ms, __ATOMIC_RELAXED), err, n) != 0) {
      status = DOMINO_ERR_TIMEOUT;
    } else if (got != c->posted[i].bytes) {
      snprintf(err, n, "storelink: rank %d sent %zu bytes where rank %d expected %zu", peer, got,
               c->rank, c->posted[i].bytes);
      status = DOMINO_ERR_PEER; /* the streams are out of step: broken, not mismatched */
    }
  }
  c->n_posted = 0;
  return status;
}

/* May run while another thread waits in fetch: the next wait takes the new value. */
static int set_timeout(domino_comm_t* c, int64_t timeout_ms, char* err, size_t n) {
  (void)err;
  (void)n;
  __atomic_store_n(&c->timeout_ms, timeout_ms, __ATOMIC_RELAXED);
  return DOMINO_OK;
}

static const domino_plugin_t table = {.abi_version = DOMINO_PLUGIN_ABI_VERSION,
                                      .name = "storelink",
                                      .devices = DOMINO_DEVICE_CPU,
                                      .comm_create = create,
                                      .comm_destroy = destroy,
                                      .allreduce = allreduce,
                                      .barrier = barrier,
                                      .broadcast = broadcast,
                                      .allgather = allgather,
                                      .comm_set_timeout = set_timeout,
                                      .link_send = link_send,
                                      .link_recv = link_recv,
                                      .link_wait = link_wait};

const domino_plugin_t* domino_plugin_init(uint32_t abi_version) {
  return abi_version == DOMINO_PLUGIN_ABI_VERSION ? &table : NULL;
}
