// Single-copy transfers: reading or writing a peer process's memory directly (Linux
// cross-memory attach, process_vm_readv/writev), as OpenMPI's shared-memory transport does for
// large messages. Halves the copies of going through the shared segment. Needs ptrace-level
// permission over the peer (same user, no Yama restriction, no seccomp filter; the kernel checks
// reads and writes alike), so groups probe it once at set-up.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace domino::shm {

// Copies bytes from remote (an address in process pid) to local. Returns 0 on success, else the
// errno of the failure (ESRCH: the process is gone or exiting).
int cross_memory_read(pid_t pid, void* local, const void* remote, size_t bytes);
// Copies bytes from local to remote (an address in process pid); errors as for reading.
int cross_memory_write(pid_t pid, void* remote, const void* local, size_t bytes);

}  // namespace domino::shm
