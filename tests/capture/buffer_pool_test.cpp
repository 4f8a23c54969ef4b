// The activity buffer pool: reuse, and refusal past its cap.
#include "capture/buffer_pool.h"

#include <gtest/gtest.h>

namespace attnprof::capture {
namespace {

TEST(BufferPool, ReusesReleasedBuffers) {
  BufferPool pool(1024, 2);
  std::uint8_t* a = pool.acquire();
  ASSERT_NE(a, nullptr);
  pool.release(a);
  EXPECT_EQ(pool.acquire(), a);
  EXPECT_EQ(pool.allocated(), 1u);
}

TEST(BufferPool, RefusesPastItsCapAndCountsIt) {
  BufferPool pool(64, 2);
  EXPECT_NE(pool.acquire(), nullptr);
  EXPECT_NE(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 1u);
  EXPECT_EQ(pool.buffer_bytes(), 64u);
}

TEST(BufferPool, BuffersAreAlignedForCupti) {
  BufferPool pool(4096, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pool.acquire()) % 8, 0u);
}

}  // namespace
}  // namespace attnprof::capture
