/* The transport plugin ABI: plain C so that a plugin built by another compiler, or years later,
 * still loads. Built-in transports register through this same table. Bump
 * DOMINO_PLUGIN_ABI_VERSION on any change. Entries are only ever appended, so the loader asks a
 * plugin's init for the newest version first, then each older one down to 3, and reads an older
 * plugin's table only up to its version's last entry (the later ones count as NULL); it refuses
 * plugins older than 3 or newer than this header. The communicator config only grows at its end
 * too: a plugin never reads a config field added after the version its init was asked for. */
#ifndef DOMINO_PLUGIN_H
#define DOMINO_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DOMINO_PLUGIN_ABI_VERSION 9u
#define DOMINO_PLUGIN_INIT_SYMBOL "domino_plugin_init"
/* comm_shrink's flags. */
#define DOMINO_SHRINK_ABORT 0x1u /* end the parent's work in flight first */

typedef enum domino_dtype {
  DOMINO_FLOAT32 = 0,
  DOMINO_FLOAT64 = 1,
  DOMINO_FLOAT16 = 2,
  DOMINO_BFLOAT16 = 3,
  DOMINO_INT8 = 4,
  DOMINO_UINT8 = 5,
  DOMINO_INT32 = 6,
  DOMINO_INT64 = 7,
  DOMINO_BOOL = 8,
  DOMINO_DTYPE_COUNT = 9
} domino_dtype_t;

typedef enum domino_redop {
  DOMINO_SUM = 0,
  DOMINO_AVG = 1,
  DOMINO_PRODUCT = 2,
  DOMINO_MIN = 3,
  DOMINO_MAX = 4,
  DOMINO_BAND = 5,
  DOMINO_BOR = 6,
  DOMINO_BXOR = 7,
  DOMINO_REDOP_COUNT = 8
} domino_redop_t;

typedef enum domino_status {
  DOMINO_OK = 0,
  DOMINO_ERR_INVALID = 1,  /* bad argument: the caller can fix it */
  DOMINO_ERR_MISMATCH = 2, /* ranks disagree about the collective; the communicator stays usable */
  DOMINO_ERR_TIMEOUT = 3,  /* a peer did not arrive in time; the communicator is broken */
  DOMINO_ERR_PEER = 4,     /* a peer died or aborted; the communicator is broken */
  DOMINO_ERR_SYSTEM = 5,   /* an OS call failed */
  DOMINO_ERR_UNSUPPORTED = 6
} domino_status_t;

/* Device kinds a plugin can move. */
#define DOMINO_DEVICE_CPU 1u
#define DOMINO_DEVICE_CUDA 2u

typedef struct domino_buffer {
  void* ptr;
  size_t count; /* elements, not bytes */
  domino_dtype_t dtype;
  int32_t device; /* -1 for host memory, else the CUDA device ordinal */
} domino_buffer_t;

/* Key/value rendezvous shared by the ranks of one group (the c10d store in the backend). Keys are
 * already private to the group. get blocks until the key exists or timeout_ms passes. Both return
 * 0 on success; on failure they write a message into err. */
typedef struct domino_bootstrap {
  void* context;
  int (*set)(void* context, const char* key, const void* data, size_t size, char* err,
             size_t err_size);
  int (*get)(void* context, const char* key, void* data, size_t capacity, size_t* size,
             int64_t timeout_ms, char* err, size_t err_size);
} domino_bootstrap_t;

typedef struct domino_comm_config {
  int32_t rank; /* rank within the communicator */
  int32_t size;
  const int64_t* global_ranks;  /* size entries, for messages */
  const char* group_name;       /* for messages */
  int64_t timeout_ms;           /* how long any rank waits for its peers */
  uint64_t workspace_bytes;     /* per-communicator staging budget; 0 = plugin default */
  uint64_t chunk_bytes;         /* pipeline chunk for large messages; 0 = plugin default */
  uint64_t small_message_bytes; /* at or below: latency-optimal algorithm; 0 = plugin default */
  int32_t single_copy;          /* large messages read straight from peers: 0 auto, -1 never */
  const domino_bootstrap_t* bootstrap;
  /* Asked between chunks of a long collective; nonzero means an operation of higher priority is
   * in flight in this process, so pause at this chunk boundary until it returns zero. May be
   * NULL. A plugin that cannot pause ignores it. */
  int (*should_pause)(void* pause_context);
  void* pause_context;
  /* Algorithm forced for large all-reduces, by name ("ring", "recursive_doubling",
   * "rabenseifner", "direct", "rsag"); NULL or "" leaves the choice to the plugin. A plugin that
   * does not know the name fails comm_create with DOMINO_ERR_INVALID. (Added in ABI 2.) */
  const char* algorithm;
  /* For transports that move device memory (Added in ABI 3; host transports ignore both): the CUDA
   * device ordinal the communicator serves and the cudaStream_t its collectives are enqueued on.
   * On a device communicator every collective is stream-ordered: it returns once enqueued, and
   * the backend learns completion from an event it records on that stream. NULL stream: the
   * plugin's own. */
  int32_t device;
  void* stream;
  /* The network interfaces this rank's traffic between hosts may use, by name, comma-separated
   * ("eth0", "eth0,ib0"): DOMINO_SOCKET_IFNAME's selection, else the interface through which this
   * host reaches the job's store. NULL or "": the transport's own choice. A transport whose
   * network state is the process's (UCX's one worker) takes the first value it sees, and fails a
   * later comm_create whose non-empty value differs with DOMINO_ERR_INVALID. A transport without
   * sockets ignores it. (Added in ABI 9.) */
  const char* socket_interfaces;
} domino_comm_config_t;

typedef struct domino_comm domino_comm_t; /* opaque, owned by the plugin */

/* One collective call, as collective_with takes it (Added in ABI 8). op is the collective's place
 * in the backend's list: 0 all_reduce, 1 broadcast, 2 reduce, 3 all_gather, 4 reduce_scatter,
 * 5 gather, 6 scatter, 7 all_to_all, 8 barrier; the other fields are the op's entry's arguments,
 * zero or NULL where it has none (broadcast's buffer is recv; all_to_all's counts and offsets per
 * peer are in elements). */
typedef struct domino_call {
  uint32_t op;
  const domino_buffer_t* send;
  domino_buffer_t* recv;
  domino_redop_t redop;
  int32_t root;
  const uint64_t* send_counts;
  const uint64_t* send_offsets;
  const uint64_t* recv_counts;
  const uint64_t* recv_offsets;
} domino_call_t;

/* Every function returns a domino_status_t and, on failure, writes a full sentence into err
 * (err_size bytes, always NUL-terminated). */
typedef struct domino_plugin {
  uint32_t abi_version; /* DOMINO_PLUGIN_ABI_VERSION the plugin was built with */
  const char* name;     /* what DOMINO_INTRA_TRANSPORT / DOMINO_INTER_TRANSPORT name it by */
  uint32_t devices;     /* DOMINO_DEVICE_* bits */

  int (*comm_create)(const domino_comm_config_t* config, domino_comm_t** comm, char* err,
                     size_t err_size);
  void (*comm_destroy)(domino_comm_t* comm);

  /* Collectives. Counts are elements. Any entry may be NULL: the backend then runs the shared
   * algorithm over the plugin's links (below), or, without links, reports the op as unsupported
   * by this transport. An entry may also return DOMINO_ERR_UNSUPPORTED for a call it cannot
   * serve (a dtype or reduction it lacks): with links the backend then runs the shared
   * algorithm, so the refusal must be the same on every rank and come before any link message.
   * In place when send->ptr == recv->ptr where shapes allow. */
  int (*allreduce)(domino_comm_t* comm, const domino_buffer_t* send, domino_buffer_t* recv,
                   domino_redop_t op, char* err, size_t err_size);
  int (*barrier)(domino_comm_t* comm, char* err, size_t err_size);
  int (*broadcast)(domino_comm_t* comm, domino_buffer_t* buffer, int32_t root, char* err,
                   size_t err_size);
  /* recv matters on root only. */
  int (*reduce)(domino_comm_t* comm, const domino_buffer_t* send, domino_buffer_t* recv,
                domino_redop_t op, int32_t root, char* err, size_t err_size);
  /* recv->count == send->count * size, rank-major. */
  int (*allgather)(domino_comm_t* comm, const domino_buffer_t* send, domino_buffer_t* recv,
                   char* err, size_t err_size);
  /* send->count == recv->count * size; rank r receives block r. */
  int (*reduce_scatter)(domino_comm_t* comm, const domino_buffer_t* send, domino_buffer_t* recv,
                        domino_redop_t op, char* err, size_t err_size);
  int (*gather)(domino_comm_t* comm, const domino_buffer_t* send, domino_buffer_t* recv,
                int32_t root, char* err, size_t err_size);
  int (*scatter)(domino_comm_t* comm, const domino_buffer_t* send, domino_buffer_t* recv,
                 int32_t root, char* err, size_t err_size);
  /* Per peer: counts and offsets (elements) into send and recv, size entries each. */
  int (*alltoall)(domino_comm_t* comm, const domino_buffer_t* send, const uint64_t* send_counts,
                  const uint64_t* send_offsets, domino_buffer_t* recv, const uint64_t* recv_counts,
                  const uint64_t* recv_offsets, char* err, size_t err_size);
  /* Point to point. Messages between two ranks arrive in order; tags must match. */
  int (*send)(domino_comm_t* comm, const domino_buffer_t* buffer, int32_t peer, int32_t tag,
              char* err, size_t err_size);
  /* peer < 0: from any rank; *source receives the sender. */
  int (*recv)(domino_comm_t* comm, domino_buffer_t* buffer, int32_t peer, int32_t tag,
              int32_t* source, char* err, size_t err_size);
  /* Makes a communicator out of an existing one, collectively over all of parent's ranks (Added
   * in ABI 3; NULL: the backend calls comm_create with a rendezvous of its own instead). Ranks
   * passing the same color >= 0 share the new communicator, ordered by key; color < 0 takes no
   * part and gets *comm == NULL. config describes the new communicator as comm_create's would. */
  int (*comm_split)(domino_comm_t* parent, int32_t color, int32_t key,
                    const domino_comm_config_t* config, domino_comm_t** comm, char* err,
                    size_t err_size);
  /* Callable from any thread, also while another thread is inside a call on comm: ends what
   * comm has in flight (on a device, its kernels) so nothing waits on it any longer; every later
   * call fails with DOMINO_ERR_PEER. comm_destroy is still called after. NULL: not supported.
   * (Added in ABI 3.) */
  void (*comm_abort)(domino_comm_t* comm);
  /* Callable from any thread, also while another thread is inside a call on comm: how long any
   * rank waits for its peers in operations that start from now on (timeout_ms > 0). NULL: comm
   * keeps the timeout it was created with. (Added in ABI 4.) */
  int (*comm_set_timeout)(domino_comm_t* comm, int64_t timeout_ms, char* err, size_t err_size);
  /* Links: the messages of the backend's shared collective algorithms (Added in ABI 5), kept
   * apart from send/recv's. link_send and link_recv post a message to or from one peer and may
   * return before it moves; link_wait completes every message posted on comm since the last
   * link_wait, or fails naming the peers at fault (within the timeout, never hanging). Messages
   * between two ranks match in the order they were posted; a posted buffer stays valid until
   * link_wait returns. Any failed link call drops every message posted since the last link_wait,
   * and a failed link_wait leaves comm broken (DOMINO_ERR_TIMEOUT or DOMINO_ERR_PEER, never
   * MISMATCH: the message streams are out of step). A plugin with all three gains every collective
   * entry it leaves NULL: the backend runs ring, recursive doubling, Rabenseifner or any other
   * all-reduce of its table (the router's choice per call), binomial trees, direct gather, scatter
   * and all-to-all, and a dissemination barrier over its links. Host memory only. */
  int (*link_send)(domino_comm_t* comm, const void* data, size_t bytes, int32_t peer, char* err,
                   size_t err_size);
  int (*link_recv)(domino_comm_t* comm, void* data, size_t bytes, int32_t peer, char* err,
                   size_t err_size);
  int (*link_wait)(domino_comm_t* comm, char* err, size_t err_size);
  /* All-reduce by the algorithm the backend's router chose for this call, by its name in the
   * backend's algorithm table (torch_domino.algorithms() lists them: "ring",
   * "recursive_doubling", "rabenseifner", ...), for a plugin that runs the table's algorithms
   * over messages of its own. A name the plugin lacks returns DOMINO_ERR_UNSUPPORTED (the same
   * on every rank, before any message): the backend then runs the named algorithm over the
   * plugin's links, or calls allreduce. As for collective_with, a refusal is remembered for the
   * dtype, reduction and name. NULL: the same, for every call. (Added in ABI 6.) */
  int (*allreduce_with)(domino_comm_t* comm, const domino_buffer_t* send, domino_buffer_t* recv,
                        domino_redop_t op, const char* algorithm, char* err, size_t err_size);
  /* Makes a communicator of parent's ranks without exclude[0..exclude_count) (parent's ranks),
   * collectively over the ranks that remain, which keep their order (rank i of the new one is the
   * i-th remaining rank); the excluded ranks may be dead and do not call it. With
   * DOMINO_SHRINK_ABORT in flags, parent's work in flight ends first (one of them may have died
   * in the middle of it). parent is only destroyed afterwards. config describes the new
   * communicator as comm_create's would; its bootstrap may be NULL. NULL entry: the backend
   * makes the new group's communicators with comm_create and a rendezvous of the remaining ranks
   * instead. (Added in ABI 7.) */
  int (*comm_shrink)(domino_comm_t* parent, const int32_t* exclude, int32_t exclude_count,
                     uint32_t flags, const domino_comm_config_t* config, domino_comm_t** comm,
                     char* err, size_t err_size);
  /* Any collective by the algorithm the backend's router chose for this call, by its name in
   * the backend's algorithm table for that op (torch_domino.algorithms() lists them: "ring" or
   * "rabenseifner" over links, shared memory's "direct", "rsag", "single_copy", "segment"), for a
   * plugin that has more than one way to run an op, or runs the table's algorithms over messages
   * of its own. A name the plugin lacks for the op returns DOMINO_ERR_UNSUPPORTED (the same on
   * every rank, before any message): the backend then tries allreduce_with (for an all-reduce),
   * then runs the named algorithm over the plugin's links where it has them and the name is one
   * of the table's over links, else calls the op's own entry. The backend remembers a refusal for
   * the op, dtype, reduction and name, and does not ask again for those: a refusal must not
   * depend on anything else of the call (its size, its buffers). NULL: the same, for every call.
   * (Added in ABI 8.) */
  int (*collective_with)(domino_comm_t* comm, const domino_call_t* call, const char* algorithm,
                         char* err, size_t err_size);
} domino_plugin_t;

/* The one symbol a plugin library exports. Returns NULL if it cannot serve abi_version. */
typedef const domino_plugin_t* (*domino_plugin_init_fn)(uint32_t abi_version);

#ifdef __cplusplus
}
#endif

#endif /* DOMINO_PLUGIN_H */
