// A shared-memory segment with no name in /dev/shm: an anonymous memfd, handed to peers as a file
// descriptor. Nothing is left behind when every holder exits, even by SIGKILL.
#pragma once

#include <cstddef>
#include <string>

namespace domino::shm {

class SharedSegment {
 public:
  // Creates and maps a fresh zero-filled segment of `bytes`, mode 0600.
  static SharedSegment create(size_t bytes, const std::string& label);
  // Maps a segment received from a peer; takes ownership of fd.
  static SharedSegment adopt(int fd);

  SharedSegment() = default;
  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  SharedSegment(int fd, void* data, size_t size) : fd_(fd), data_(data), size_(size) {}
  void release() noexcept;

  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace domino::shm
