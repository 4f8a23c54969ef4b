#include "bench/replay_runner.h"

#include <algorithm>

#include <fmt/core.h>

#include "bench/bench.h"
#include "common/input_error.h"

namespace attnprof::bench {
namespace {

BenchOptions options_for(const ReplayShape& s, const std::string& dtype, const BenchOptions& base) {
  BenchOptions o = base;
  set_shape(o, s.bench);
  o.dtype = attention::parse_dtype(dtype);
  o.causal = s.causal;
  o.bottom_right = s.bottom_right;
  o.dropout = static_cast<float>(s.dropout);
  o.hot = true;  // the trace's calls ran back to back, inside a program
  o.json = false;
  o.trace_dir.clear();
  return o;
}

// The bench's row for row.impl into the replay row: the forward's time, or (backward) the backward's.
void take(const BenchRun& run, ReplayRow& row, bool backward) {
  std::string& why = backward ? row.backward_why_not : row.why_not;
  for (const ImplResult& r : run.rows) {
    if (r.name != row.impl) continue;
    if (!r.skipped.empty()) {
      why = r.skipped;
    } else if (r.rel_error && !r.check_passed) {
      why = fmt::format("failed its fp64 check (relative error {:.2g})", *r.rel_error);
    } else if (backward) {
      row.backward_ms = r.kernel_ms ? *r.kernel_ms : r.median_ms;
    } else {
      row.ms = r.kernel_ms ? *r.kernel_ms : r.median_ms;  // like the trace: kernel time
      row.wall_ms = r.median_ms;
    }
    return;
  }
  why = "not run by the bench";
}

// One bench run per dtype of the rows `wanted` picks, side by side; if it refuses, one run per row
// for the reason.
template <typename Wanted>
void run_rows(Replay& replay, ReplayShape& s, const BenchOptions& base, bool backward, Wanted wanted) {
  std::vector<std::string> dtypes;
  for (const ReplayRow& r : s.rows)
    if (wanted(r) && std::find(dtypes.begin(), dtypes.end(), r.dtype) == dtypes.end()) dtypes.push_back(r.dtype);
  for (const std::string& dtype : dtypes) {
    BenchOptions o = options_for(s, dtype, base);
    o.pass = backward ? Pass::Backward : Pass::Forward;
    for (const ReplayRow& r : s.rows)
      if (r.dtype == dtype && wanted(r)) o.impls.push_back(r.impl);
    try {
      const BenchRun run = run_bench(o);
      replay.device = run.device;
      for (ReplayRow& r : s.rows)
        if (r.dtype == dtype && wanted(r)) take(run, r, backward);
    } catch (const std::exception&) {  // a shape, dtype, memory or library refusal: row by row, each says
      for (ReplayRow& r : s.rows) {
        if (r.dtype != dtype || !wanted(r)) continue;
        BenchOptions one = o;
        one.impls = {r.impl};
        try {
          const BenchRun run = run_bench(one);
          replay.device = run.device;
          take(run, r, backward);
        } catch (const std::exception& e) {
          (backward ? r.backward_why_not : r.why_not) = e.what();
        }
      }
    }
  }
}

}  // namespace

void set_shape(BenchOptions& o, const BenchShape& shape) {
  o.batch = static_cast<int>(shape.shape.batch);
  o.heads = static_cast<int>(shape.shape.q_heads);
  o.kv_heads = static_cast<int>(shape.shape.kv_heads);
  o.seq = static_cast<int>(shape.shape.q_len);
  o.kv_seq = static_cast<int>(shape.shape.kv_len);
  o.head_dim = static_cast<int>(shape.shape.head_dim);
  if (shape.page_size > 0) o.page_size = shape.page_size;
}

void run_replay(Replay& replay, const BenchOptions& base) {
  replay.no_gpu = base.device == DeviceChoice::Cpu ? "--device cpu: the replay needs a GPU" : base.no_gpu;
  for (ReplayShape& s : replay.shapes) {
    if (!s.problem.empty()) continue;
    if (!replay.no_gpu.empty()) {
      for (ReplayRow& r : s.rows) {
        r.why_not = "no GPU here";
        if (s.backward_calls > 0 && r.backward_why_not.empty()) r.backward_why_not = "no GPU here";
      }
      continue;
    }
    run_rows(replay, s, base, false, [](const ReplayRow&) { return true; });
    // Training: the backward of the rows that have one (the traced calls' backward paired with them).
    if (s.backward_calls > 0)
      run_rows(replay, s, base, true, [](const ReplayRow& r) { return replay_has_backward(r.impl); });
  }
  finish_replay(replay);
}

}  // namespace attnprof::bench
