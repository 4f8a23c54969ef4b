// A capture window of NVTX ranges (attnprof record --capture-range nvtx:NAME [--steps FROM:TO |
// --capture-count N]): which push opens it and which pop closes it. Recording starts at the push of
// the FIRST-th range named NAME (0-based) and ends at the pop that closes the COUNT-th recorded one.
// Ranges nest: a thread inside a range of that name counts the pushes and pops below it, whatever
// their names. Called inside the application's NVTX calls on any thread; lock-free, CUDA-free.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <utility>

namespace attnprof::capture {

class NvtxWindow {
 public:
  enum class Action {
    None,
    Open,   // the window's first range began: start recording
    End,    // a recorded range ended; the window stays open
    Close,  // the window's last range ended: write the trace (at most once)
  };

  NvtxWindow(std::string name, long first, long count)
      : name_(std::move(name)), first_(first < 0 ? 0 : first), count_(count < 1 ? 1 : count) {}

  // Where a thread is: keep one per thread (thread_local) and pass it to every push and pop.
  struct Thread {
    int depth = 0;          // > 0: inside a range named like the window, its nesting
    bool recorded = false;  // that outermost range is one of the window's
  };

  // Only a thread's outermost range of the window's name counts: a range of that name nested in
  // another belongs to it.
  Action push(std::string_view name, Thread& t) {
    if (t.depth > 0) {
      ++t.depth;
      return Action::None;
    }
    if (closed_.load() || name != name_) return Action::None;
    t.depth = 1;
    t.recorded = seen_.fetch_add(1) >= first_;  // else a range before the window
    if (!t.recorded) return Action::None;
    return opened_.exchange(true) ? Action::None : Action::Open;
  }

  Action pop(Thread& t) {
    if (t.depth == 0 || --t.depth > 0 || !t.recorded) return Action::None;
    t.recorded = false;
    if (done_.fetch_add(1) + 1 < count_) return Action::End;
    return closed_.exchange(true) ? Action::End : Action::Close;
  }

  // No range opens it any more (the recorder could not start).
  void close() { closed_ = true; }
  bool opened() const { return opened_.load(); }
  const std::string& name() const { return name_; }

 private:
  const std::string name_;
  const long first_, count_;
  std::atomic<long> seen_{0}, done_{0};
  std::atomic<bool> opened_{false}, closed_{false};
};

}  // namespace attnprof::capture
