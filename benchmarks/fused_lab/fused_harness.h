// Check-and-time harness for the fused attention forward, shared by the GPU tests
// and attnprof_fused_lab. The project's one input generator (make_host_inputs),
// one fp64 check (check_against_reference, with the lse and the unwritten-output
// poison) and AttentionParams, run on one kernel path at a time.
#pragma once

#include <string>
#include <vector>

#include "attention/cpu/check.h"
#include "attention/params.h"
#include "schedule.h"
#include "tile_timers.h"

namespace attnprof::fused {

struct CaseCheck {
  attention::cpu::CheckResult result;
  std::string error;  // non-empty when the call was refused or a CUDA call failed
  bool ok(double tolerance) const { return error.empty() && result.passed(tolerance); }
};

// The correctness suite: bf16/fp16, D 64/128, causal and not, odd and
// differing lengths, GQA/MQA, BHSD/BSHD, custom scale, tile multiples, no keys.
std::vector<attention::AttentionParams> check_cases();
// A few small cases for compute-sanitizer runs (memcheck, racecheck): partial
// tiles, several kv tiles, GQA, causal, both dtypes and head dims.
std::vector<attention::AttentionParams> small_cases();

// Short queries against long keys (the decode kernel's): q_len 1-16, kv_len 0 to 128k and odd, GQA
// groups 1-16 and MQA, top-left and bottom-right causal, both layouts, dtypes and head dims.
std::vector<attention::AttentionParams> decode_cases();
// A few of them, small enough for compute-sanitizer: a split head, q_len 3-16 bottom-right (one to four
// row tiles, four row chunks), no keys.
std::vector<attention::AttentionParams> small_decode_cases();

// How the keys are held: dense (the default), or as a serving engine's cache (make_kv_cache): paged in
// pages of page_size tokens, and/or ragged (ragged_lengths: each sequence its own length).
struct KvForm {
  int page_size = 0;
  bool ragged = false;
};

// How the forward is called: once on the legacy default stream (the default), or `calls` times in a row
// on a stream of its own, or `calls` replays of a CUDA graph captured on that stream; the outputs are
// poisoned before every call (in the graph too), so each call must write all of them itself.
struct CallForm {
  int calls = 1;
  bool own_stream = false;
  bool graph = false;
};

// Runs the forward on fresh random inputs (seeded), outputs poisoned, and checks out and lse of the last
// call against fp64. `shape`'s pointers are ignored. A paged or ragged form is checked sequence by
// sequence against the reference over that sequence's keys.
CaseCheck check_case(const attention::AttentionParams& shape, Path path, unsigned seed,
                     const LaunchOverrides& overrides = {}, KvForm form = {}, CallForm call = {});

struct TimeResult {
  double median_ms = 0;
  double tflops = 0;
  std::string error;
};

// Median over `iters` timed bursts of launches after `warmup` launches (hot: no
// cache flush, back to back); `cold`: one call a sample, the L2 overwritten before each (the bench's
// way: a decode call's K/V may fit in the L2).
TimeResult time_case(const attention::AttentionParams& shape, Path path, int warmup, int iters,
                     const LaunchOverrides& overrides = {}, bool cold = false);

struct TileTimesResult {
  TileTimes times;
  double clock_ghz = 0;  // the SM clock while the timed launch ran: its cycles over its nanoseconds
  std::string error;
};

// The per-tile timers (tile_timers.h) of one launch of `path`'s timed kernel (one_tile or persistent:
// has_tile_timers) on random bf16 inputs, after `warmup` untimed launches.
TileTimesResult time_tiles(const attention::AttentionParams& shape, int warmup, Path path = Path::Persistent,
                           const LaunchOverrides& overrides = {});

// Whether a CUDA device is present (GPU tests skip without one).
bool have_device();

}  // namespace attnprof::fused
