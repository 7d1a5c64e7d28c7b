// Scratch, copies and division on CUDA memory for plans that pass through scratch buffers
// (RoutedComm's hierarchical and leader all-reduces). Everything is enqueued on the calling
// thread's current stream, which the lane sets to its comm stream, so it stays in order with the
// transport's own stream-ordered collectives.
#pragma once

#include "engine/RoutedComm.h"

namespace domino {

class DeviceMemory : public RoutedComm::Memory {
 public:
  std::shared_ptr<void> allocate(size_t bytes, int device) override;
  void copy(void* dst, const void* src, size_t bytes, int device) override;
  void divide(const domino_buffer_t& buffer, int divisor) override;
};

}  // namespace domino
