#include "CrossMemory.h"

#include <sys/uio.h>

#include <cerrno>

namespace domino::shm {

namespace {
template <class Transfer>
int transfer_all(pid_t pid, char* local, char* remote, size_t bytes, Transfer&& transfer) {
  while (bytes > 0) {
    iovec mine{local, bytes};
    iovec theirs{remote, bytes};
    const ssize_t n = transfer(pid, &mine, 1, &theirs, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EFAULT;
    local += n;
    remote += n;
    bytes -= static_cast<size_t>(n);
  }
  return 0;
}
}  // namespace

int cross_memory_read(pid_t pid, void* local, const void* remote, size_t bytes) {
  return transfer_all(pid, static_cast<char*>(local), static_cast<char*>(const_cast<void*>(remote)),
                      bytes, process_vm_readv);
}

int cross_memory_write(pid_t pid, void* remote, const void* local, size_t bytes) {
  return transfer_all(pid, static_cast<char*>(const_cast<void*>(local)), static_cast<char*>(remote),
                      bytes, process_vm_writev);
}

}  // namespace domino::shm
