// The NVTX capture window on synthetic push/pop sequences, as the application's threads make them.
#include "capture/nvtx_window.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace attnprof::capture {
namespace {

using Action = NvtxWindow::Action;

// One thread's training loop: each step a range "step" holding "fwd" and "bwd"; the actions the
// window returns, in order, with the step they came in.
std::vector<std::string> run_steps(NvtxWindow& w, int steps) {
  std::vector<std::string> out;
  NvtxWindow::Thread depth;
  auto note = [&](Action a, int step) {
    if (a == Action::Open) out.push_back("open@" + std::to_string(step));
    if (a == Action::End) out.push_back("end@" + std::to_string(step));
    if (a == Action::Close) out.push_back("close@" + std::to_string(step));
  };
  for (int s = 0; s < steps; ++s) {
    note(w.push("step", depth), s);
    for (const char* inner : {"fwd", "bwd", "step"}) {  // nested, one named like the window: part of the step
      note(w.push(inner, depth), s);
      note(w.pop(depth), s);
    }
    note(w.pop(depth), s);
    note(w.push("logging", depth), s);  // between steps: outside every step
    note(w.pop(depth), s);
  }
  return out;
}

TEST(NvtxWindow, StepsFromToOpenAtTheFirstAndCloseAtTheLast) {
  NvtxWindow w("step", 100, 10);  // --steps 100:109
  const auto actions = run_steps(w, 130);
  std::vector<std::string> want{"open@100"};
  for (int s = 100; s < 109; ++s) want.push_back("end@" + std::to_string(s));
  want.push_back("close@109");
  EXPECT_EQ(actions, want);
}

TEST(NvtxWindow, OneRangeByDefaultAndNothingAfterTheClose) {
  NvtxWindow w("step", 0, 1);
  EXPECT_EQ(run_steps(w, 5), (std::vector<std::string>{"open@0", "close@0"}));
}

TEST(NvtxWindow, OtherNamesNeverOpenIt) {
  NvtxWindow w("tick3", 0, 1);
  EXPECT_TRUE(run_steps(w, 20).empty());
  EXPECT_FALSE(w.opened());
}

TEST(NvtxWindow, ClosedBeforeOpeningStaysShut) {  // the recorder could not start
  NvtxWindow w("step", 0, 3);
  NvtxWindow::Thread depth;
  EXPECT_EQ(w.push("step", depth), Action::Open);
  w.close();
  EXPECT_EQ(w.pop(depth), Action::End);  // the range it was in still ends
  EXPECT_EQ(w.push("step", depth), Action::None);
  EXPECT_EQ(depth.depth, 0);
}

// Ranges of the window's name on several threads count together; exactly one Open and one Close.
TEST(NvtxWindow, ThreadsShareTheCount) {
  NvtxWindow w("step", 10, 40);
  std::atomic<int> opens{0}, ends{0}, closes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      NvtxWindow::Thread depth;
      for (int i = 0; i < 50; ++i) {
        const Action a = w.push("step", depth);
        opens += a == Action::Open;
        const Action b = w.pop(depth);
        ends += b == Action::End;
        closes += b == Action::Close;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(opens.load(), 1);
  EXPECT_EQ(closes.load(), 1);
  // 40 recorded ranges: 39 ends, then the close; ranges the other three threads began before the
  // close end after it (End, not a second Close), so up to 3 more ends. (Exactly 39 failed about
  // one run in six on 2 cores.)
  EXPECT_GE(ends.load(), 39);
  EXPECT_LE(ends.load(), 39 + 3);
}

}  // namespace
}  // namespace attnprof::capture
