#include "CrossMemory.h"

#include <sys/uio.h>

#include <cerrno>

namespace domino::shm {

int cross_memory_read(pid_t pid, void* local, const void* remote, size_t bytes) {
  auto* to = static_cast<char*>(local);
  auto* from = static_cast<char*>(const_cast<void*>(remote));
  while (bytes > 0) {
    iovec mine{to, bytes};
    iovec theirs{from, bytes};
    const ssize_t n = process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EFAULT;
    to += n;
    from += n;
    bytes -= static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace domino::shm
