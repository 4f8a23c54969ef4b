// The per-tile timer summary on synthetic records: phases from the cycle counter, the grid's span
// and the gaps between CTAs on an SM from the global timer.
#include "tile_timers.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace attnprof::fused {
namespace {

TEST(TileTimers, LayoutFollowsTheTileTable) {
  const TimerLayout l = timer_layout(2, 16, 1000, 128, Path::OneTile);  // BM 128: 8 row blocks
  EXPECT_EQ(l.ctas, 8 * 16 * 2);
  EXPECT_EQ(l.consumers, 2);
  EXPECT_EQ(l.words(), std::size_t(8 * 16 * 2) * 2 * kTimerSlots);
  // D=64 from 2048 rows: BM 192, 3 consumers one CTA per tile; the persistent grid keeps 2 (BM 128).
  const TimerLayout m192 = timer_layout(1, 4, 4096, 64, Path::OneTile);
  EXPECT_EQ(m192.ctas, 22 * 4);
  EXPECT_EQ(m192.consumers, 3);
  const TimerLayout persistent = timer_layout(1, 4, 4096, 64, Path::Persistent);
  EXPECT_EQ(persistent.ctas, 32 * 4);
  EXPECT_EQ(persistent.consumers, 2);
}

// 4 CTAs of 2 consumers on 2 SMs at 2 GHz; each tile: setup 0.5 us, Q 1 us, first S 1 us,
// 5 key blocks of 1 us after the first... (main loop 4 us), epilogue 1 us.
TEST(TileTimers, PhasesSpanAndGaps) {
  const TimerLayout l{4, 2};
  std::vector<std::uint64_t> w(l.words());
  const std::uint64_t starts_ns[4] = {0, 100, 8000, 8600};  // SM 0: CTAs 0, 2; SM 1: CTAs 1, 3
  for (int cta = 0; cta < 4; ++cta)
    for (int c = 0; c < 2; ++c) {
      std::uint64_t* r = &w[(std::size_t(cta) * 2 + c) * kTimerSlots];
      const std::uint64_t base = 1'000'000 * (cta + 1);  // SM clocks differ; only differences count
      r[kClockEntry] = base;
      r[kClockConsumerStart] = base + 1000;
      r[kClockQReady] = base + 3000;
      r[kClockFirstS] = base + 5000;
      r[kClockLastPv] = base + 5000 + 4 * 2000;
      r[kClockEnd] = base + 15000;
      r[kKvBlocks] = 5;
      r[kSmId] = cta % 2;
      r[kGlobalStart] = starts_ns[cta];
      r[kGlobalEnd] = starts_ns[cta] + 7500 - (c == 0 ? 100 : 0);  // the later consumer ends the CTA
    }
  const TileTimes t = summarize_timers(w, l, 2.0);
  EXPECT_EQ(t.records, 8);
  EXPECT_EQ(t.sms, 2);
  EXPECT_DOUBLE_EQ(t.ctas_per_sm, 2.0);
  EXPECT_DOUBLE_EQ(t.setup.median, 0.5);
  EXPECT_DOUBLE_EQ(t.q_load.median, 1.0);
  EXPECT_DOUBLE_EQ(t.first_s.median, 1.0);
  EXPECT_DOUBLE_EQ(t.main_loop.median, 4.0);
  EXPECT_DOUBLE_EQ(t.per_kv_block.median, 1.0);
  EXPECT_DOUBLE_EQ(t.epilogue.median, 1.0);
  EXPECT_DOUBLE_EQ(t.tile.median, 7.5);
  EXPECT_DOUBLE_EQ(t.fixed.median, 3.5);
  EXPECT_DOUBLE_EQ(t.span_us, 16.1);
  EXPECT_DOUBLE_EQ(t.gap_between_ctas.p10, 0.5);  // SM 0: 7.5 -> 8.0 us
  EXPECT_DOUBLE_EQ(t.gap_between_ctas.p90, 1.0);  // SM 1: 7.6 -> 8.6 us
  EXPECT_NE(format_tile_times(t).find("per key block"), std::string::npos);
}

// The producer's Q issue stamp: 3 records issued 0.5 us before the consumer's start (the Q then
// 1.5 us in flight), 1 record issued 0.25 us after it (0.75 us in flight), and 4 records without a
// Q (stamp 0: a tile whose rows see no key), which the two Q-issue spreads leave out.
TEST(TileTimers, QIssueStampIsSignedAndOptional) {
  const TimerLayout l{4, 2};
  std::vector<std::uint64_t> w(l.words());
  for (int i = 0; i < 8; ++i) {
    std::uint64_t* r = &w[std::size_t(i) * kTimerSlots];
    const std::uint64_t base = 1'000'000;
    r[kClockEntry] = r[kClockConsumerStart] = base;
    r[kClockQReady] = r[kClockFirstS] = r[kClockLastPv] = r[kClockEnd] = base + 2000;
    r[kKvBlocks] = 1;
    if (i < 3) r[kClockQIssued] = base - 1000;
    if (i == 3) r[kClockQIssued] = base + 500;
  }
  const TileTimes t = summarize_timers(w, l, 2.0);
  EXPECT_EQ(t.records, 8);
  EXPECT_EQ(t.q_issue_records, 4);
  EXPECT_DOUBLE_EQ(t.q_issue_lead.median, 0.5);
  EXPECT_DOUBLE_EQ(t.q_issue_lead.p10, -0.25);
  EXPECT_DOUBLE_EQ(t.q_issue_to_ready.median, 1.5);
  EXPECT_DOUBLE_EQ(t.q_issue_to_ready.p10, 0.75);
  EXPECT_NE(format_tile_times(t).find("Q issued before the tile's start"), std::string::npos);
  // Without stamps (all records 0) the lines are left out.
  for (int i = 0; i < 8; ++i) w[std::size_t(i) * kTimerSlots + kClockQIssued] = 0;
  EXPECT_EQ(format_tile_times(summarize_timers(w, l, 2.0)).find("Q issued"), std::string::npos);
}

TEST(TileTimers, TooFewWordsIsAnError) {
  EXPECT_THROW(summarize_timers(std::vector<std::uint64_t>(10), TimerLayout{4, 2}, 2.0), std::invalid_argument);
}

}  // namespace
}  // namespace attnprof::fused
