// The per-thread log of runtime/driver calls that CUPTI callbacks fill.
#include "capture/call_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace attnprof::capture {
namespace {

TEST(CallLog, NestedCallsFinishInnerFirstAndRunningCallsStay) {
  CallLog log;
  log.enter(false, 211, 1, 100);  // cudaLaunchKernel ...
  log.enter(false, 200, 2, 110);  // ... a runtime call inside it (kept) ...
  log.enter(true, 307, 3, 120);   // ... and a driver call inside that (not kept: its launch is the outer call's)
  log.exit(3, 130);
  log.exit(2, 150);
  EXPECT_EQ(log.drain().size(), 1u);  // the inner runtime call; the outer one still runs
  log.exit(1, 200);
  const std::vector<CallRecord> calls = log.drain();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].correlation, 1u);
  EXPECT_EQ(calls[0].start_ns, 100);
  EXPECT_EQ(calls[0].end_ns, 200);
  EXPECT_FALSE(calls[0].driver);
  EXPECT_EQ(calls[0].tid, static_cast<std::int64_t>(gettid()));
  EXPECT_TRUE(log.drain().empty());
}

// Recording that began inside a call sees its exit only: ignored. A call whose exit was missed is
// dropped with the call around it.
// A driver call of its own (cuBLAS launching with cuLaunchKernelEx) is kept.
TEST(CallLog, DriverCallsOutsideRuntimeCallsAreKept) {
  CallLog log;
  log.enter(true, 652, 5, 100);
  log.exit(5, 120);
  const std::vector<CallRecord> calls = log.drain();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(calls[0].driver);
  EXPECT_EQ(calls[0].cbid, 652u);
}

TEST(CallLog, UnmatchedExitsAreIgnored) {
  CallLog log;
  log.exit(9, 50);
  log.enter(false, 211, 1, 100);
  log.enter(false, 211, 2, 110);  // its exit never comes
  log.exit(1, 200);
  const std::vector<CallRecord> calls = log.drain();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].correlation, 1u);
  log.enter(false, 211, 3, 300);
  log.clear();
  log.exit(3, 310);
  EXPECT_TRUE(log.drain().empty());
}

TEST(CallLog, EachThreadKeepsItsOwnCallsAndThreadId) {
  CallLog log;
  constexpr int kCalls = 5000;
  std::vector<std::int64_t> tids(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      tids[t] = gettid();
      for (int i = 0; i < kCalls; ++i) {
        const auto corr = static_cast<std::uint32_t>(t * kCalls + i);
        log.enter(false, 211, corr, i);
        log.exit(corr, i + 1);
      }
    });
  std::size_t drained_meanwhile = 0;
  for (int i = 0; i < 50; ++i) drained_meanwhile += log.drain().size();  // draining while they call
  for (auto& th : threads) th.join();
  std::vector<CallRecord> calls = log.drain();
  EXPECT_EQ(calls.size() + drained_meanwhile, 2u * kCalls);
  for (const CallRecord& c : calls) {
    const int t = c.correlation < kCalls ? 0 : 1;
    EXPECT_EQ(c.tid, tids[t]);
    EXPECT_EQ(c.end_ns, c.start_ns + 1);
  }
  EXPECT_EQ(log.thread_logs(), 0u);  // both threads ended: their emptied logs went with the drain
  log.enter(false, 211, 1, 1);       // this thread's stays while it lives
  log.exit(1, 2);
  EXPECT_EQ(log.drain().size(), 1u);
  EXPECT_EQ(log.thread_logs(), 1u);
}

}  // namespace
}  // namespace attnprof::capture
