// Fixed-size activity buffers for CUPTI, reused instead of freed. Past its cap
// the pool hands out nothing: CUPTI then drops records and counts them, and the
// recorder reports the count, instead of memory growing without bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace attnprof::capture {

class BufferPool {
 public:
  BufferPool(std::size_t buffer_bytes, std::size_t max_buffers)
      : buffer_bytes_(buffer_bytes), max_buffers_(max_buffers) {}
  // A free buffer, a new one while under the cap, else nullptr. Buffers come
  // from new[], aligned well past the 8 bytes CUPTI needs.
  std::uint8_t* acquire();
  void release(std::uint8_t* buffer);
  std::size_t buffer_bytes() const { return buffer_bytes_; }
  std::size_t allocated() const;
  std::size_t refused() const;

 private:
  std::size_t buffer_bytes_;
  std::size_t max_buffers_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<std::uint8_t[]>> owned_;
  std::vector<std::uint8_t*> free_;
  std::size_t refused_ = 0;
};

}  // namespace attnprof::capture
