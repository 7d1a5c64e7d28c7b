#include "SharedSegment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "plugins/common/TransportError.h"

namespace domino::shm {

namespace {
[[noreturn]] void fail(const std::string& what, int err) {
  throw TransportError(DOMINO_ERR_SYSTEM, "shared memory: " + what + ": " + std::strerror(err));
}

void* map_fd(int fd, size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    const int err = errno;
    close(fd);
    fail("mmap of " + std::to_string(bytes) +
             " bytes (raise the memory limit or lower "
             "DOMINO_SHM_BYTES)",
         err);
  }
  return data;
}
}  // namespace

SharedSegment SharedSegment::create(size_t bytes, const std::string& label) {
  const int fd = memfd_create(("domino-" + label).c_str(), MFD_CLOEXEC);
  if (fd < 0) fail("memfd_create", errno);
  if (fchmod(fd, S_IRUSR | S_IWUSR) != 0) {
    const int err = errno;
    close(fd);
    fail("fchmod 0600", err);
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    close(fd);
    fail("ftruncate to " + std::to_string(bytes) + " bytes", err);
  }
  return SharedSegment(fd, map_fd(fd, bytes), bytes);
}

SharedSegment SharedSegment::adopt(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    fail("fstat of a received segment", err);
  }
  const auto bytes = static_cast<size_t>(st.st_size);
  return SharedSegment(fd, map_fd(fd, bytes), bytes);
}

SharedSegment::SharedSegment(SharedSegment&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedSegment::~SharedSegment() {
  release();
}

void SharedSegment::release() noexcept {
  if (data_ != nullptr) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
  data_ = nullptr;
  fd_ = -1;
  size_ = 0;
}

}  // namespace domino::shm
