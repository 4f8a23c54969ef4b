// The activity buffer pool (see buffer_pool.h).
#include "capture/buffer_pool.h"

namespace attnprof::capture {

std::uint8_t* BufferPool::acquire() {
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    auto* b = free_.back();
    free_.pop_back();
    return b;
  }
  if (owned_.size() >= max_buffers_) {
    ++refused_;
    return nullptr;
  }
  owned_.push_back(std::make_unique_for_overwrite<std::uint8_t[]>(buffer_bytes_));
  return owned_.back().get();
}

void BufferPool::release(std::uint8_t* buffer) {
  if (buffer == nullptr) return;
  std::lock_guard lock(mutex_);
  free_.push_back(buffer);
}

std::size_t BufferPool::allocated() const {
  std::lock_guard lock(mutex_);
  return owned_.size();
}

std::size_t BufferPool::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

}  // namespace attnprof::capture
