// Per-tile timers of the Hopper kernel: where a tile's time goes (its fixed cost against its key
// blocks). A timed launch (timed_launch.h) has the leading thread of each
// consumer warpgroup of each CTA write kTimerSlots words: the SM's cycle counter at kernel entry,
// at the consumer's start, when Q is in shared memory, when the first S = Q K^T is in registers,
// when the last O += P V is done and when the output is written; the global nanosecond timer at
// entry and end; the SM's id and the number of key blocks; and the SM's cycle counter when the
// producer issued the tile's Q load (0 for a tile that loads no Q). CUDA-free: the summary is
// tested on the CPU with synthetic words.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "schedule.h"

namespace attnprof::fused {

enum TimerSlot : int {
  kGlobalStart = 0,  // %globaltimer (ns) at kernel entry
  kGlobalEnd,        // %globaltimer after the output is written
  kClockEntry,       // clock64 at kernel entry
  kClockConsumerStart,
  kClockQReady,
  kClockFirstS,
  kClockLastPv,
  kClockEnd,
  kSmId,
  kKvBlocks,
  kClockQIssued,     // clock64 when the producer issued the tile's Q load; 0 when it loaded none
  kTimerSlots = 16,  // words per record (the rest unused)
};

// The records of one launch: ctas x consumers, record (cta, consumer) at
// (cta * consumers + consumer) * kTimerSlots, cta = the block's linear index.
struct TimerLayout {
  int ctas = 0;
  int consumers = 0;
  std::size_t words() const { return std::size_t(ctas) * std::size_t(consumers) * kTimerSlots; }
};

// The layout of a timed schedule's records for this call: one_tile's rows from the tile table, the
// persistent grid's two consumer warpgroups at every head dim. One record per (tile, consumer) either
// way, indexed as one_tile's grid.
TimerLayout timer_layout(int batch, int heads, int q_len, int head_dim, Path path);

struct Spread {  // over the records, in microseconds
  double p10 = 0, median = 0, p90 = 0;
};

struct TileTimes {
  int records = 0;
  int sms = 0;             // distinct SMs that ran a CTA
  double ctas_per_sm = 0;  // mean
  Spread setup;            // entry -> consumer start (barrier init, register reallocation)
  Spread q_load;           // consumer start -> Q in shared memory
  // Of the records with a Q issue stamp: how long before the consumer's start (for the persistent
  // kernels the previous tile's end) the producer issued this tile's Q load (negative: after it),
  // and from that issue to the Q in shared memory (the load's latency as the consumer saw it).
  int q_issue_records = 0;
  Spread q_issue_lead;
  Spread q_issue_to_ready;
  Spread first_s;           // Q ready -> first S in registers (first K tile, first GEMM)
  Spread main_loop;         // first S -> last P V done
  Spread per_kv_block;      // main loop / (key blocks - 1); blocks of CTAs with one key block left out
  Spread epilogue;          // last P V -> output written
  Spread tile;              // entry -> output written
  Spread fixed;             // tile - main loop: what a tile costs besides its key blocks
  double span_us = 0;       // first entry to last end, across the grid (global timer)
  Spread gap_between_ctas;  // on one SM, a CTA's end to the next CTA's start (global timer)
};

// `clock_ghz` converts the cycle counter (the SM clock while the kernel ran). Throws
// std::invalid_argument when `words` does not hold the layout.
TileTimes summarize_timers(const std::vector<std::uint64_t>& words, const TimerLayout& layout, double clock_ghz);

// A few lines for the lab's output.
std::string format_tile_times(const TileTimes& t);

}  // namespace attnprof::fused
