/* What the oneccl-devel wheel's CPU-only static library needs beyond Debian's hwloc and
 * libfabric, defined here rather than pulling in Intel's compiler and SYCL runtimes (several GB
 * of wheels) for a bench peer:
 * - the Intel compiler's memcpy and memset entry points, which are the C library's functions;
 * - ITT's collector hooks, null, which is the state ITT's own library leaves them in when no
 *   profiler is attached: every ITT call site tests its pointer first. */
#include <string.h>

void* _intel_fast_memcpy(void* to, const void* from, size_t n) { return memcpy(to, from, n); }
void* _intel_fast_memset(void* to, int value, size_t n) { return memset(to, value, n); }

void* __itt_domain_create_ptr__3_0;
void* __itt_event_create_ptr__3_0;
void* __itt_event_end_ptr__3_0;
void* __itt_event_start_ptr__3_0;
void* __itt_metadata_add_ptr__3_0;
void* __itt_string_handle_create_ptr__3_0;
void* __itt_task_begin_ptr__3_0;
void* __itt_task_end_ptr__3_0;
void* __itt_thread_set_name_ptr__3_0;
