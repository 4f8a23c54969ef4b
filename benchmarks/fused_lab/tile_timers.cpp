// Summary of the Hopper kernel's per-tile timers (see tile_timers.h).
#include "tile_timers.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "tile_table.h"

namespace attnprof::fused {
namespace {

Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) { return v[static_cast<std::size_t>(q * double(v.size() - 1) + 0.5)]; };
  s.p10 = at(0.1);
  s.median = at(0.5);
  s.p90 = at(0.9);
  return s;
}

}  // namespace

TimerLayout timer_layout(int batch, int heads, int q_len, int head_dim, Path path) {
  TileConfig t = tile_for(TileRows::Hopper, head_dim, q_len);
  if (path != Path::OneTile) t = with_consumers(t, 2);
  TimerLayout l;
  l.ctas = ((q_len + t.block_m - 1) / t.block_m) * heads * batch;
  l.consumers = t.consumers;
  return l;
}

TileTimes summarize_timers(const std::vector<std::uint64_t>& words, const TimerLayout& layout, double clock_ghz) {
  if (words.size() < layout.words() || layout.ctas <= 0 || layout.consumers <= 0 || !(clock_ghz > 0))
    throw std::invalid_argument(
        fmt::format("tile timers: {} words for {} CTAs x {} consumers", words.size(), layout.ctas, layout.consumers));
  const double us_per_cycle = 1e-3 / clock_ghz;
  std::vector<double> setup, q_load, first_s, main_loop, per_block, epilogue, tile, fixed, q_lead, q_latency;
  std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> by_sm;  // sm -> (start, end) ns
  std::uint64_t first = ~std::uint64_t(0), last = 0;
  TileTimes t;
  for (int cta = 0; cta < layout.ctas; ++cta) {
    for (int c = 0; c < layout.consumers; ++c) {
      const std::uint64_t* r = &words[(std::size_t(cta) * layout.consumers + c) * kTimerSlots];
      // Signed: the Q issue may come after the consumer's start; the other phases never go back.
      const auto cycles = [&](int from, int to) {
        return double(static_cast<std::int64_t>(r[to] - r[from])) * us_per_cycle;
      };
      setup.push_back(cycles(kClockEntry, kClockConsumerStart));
      q_load.push_back(cycles(kClockConsumerStart, kClockQReady));
      first_s.push_back(cycles(kClockQReady, kClockFirstS));
      main_loop.push_back(cycles(kClockFirstS, kClockLastPv));
      if (r[kKvBlocks] > 1) per_block.push_back(cycles(kClockFirstS, kClockLastPv) / double(r[kKvBlocks] - 1));
      epilogue.push_back(cycles(kClockLastPv, kClockEnd));
      tile.push_back(cycles(kClockEntry, kClockEnd));
      fixed.push_back(tile.back() - main_loop.back());
      if (r[kClockQIssued] != 0) {  // 0: the tile loaded no Q
        q_lead.push_back(cycles(kClockQIssued, kClockConsumerStart));
        q_latency.push_back(cycles(kClockQIssued, kClockQReady));
      }
      ++t.records;
    }
    // The CTA's span on its SM: the first consumer's record holds the CTA's entry; its end is the
    // later of its consumers' ends.
    const std::uint64_t* r0 = &words[std::size_t(cta) * layout.consumers * kTimerSlots];
    std::uint64_t end = 0;
    for (int c = 0; c < layout.consumers; ++c)
      end = std::max(end, words[(std::size_t(cta) * layout.consumers + c) * kTimerSlots + kGlobalEnd]);
    by_sm[r0[kSmId]].emplace_back(r0[kGlobalStart], end);
    first = std::min(first, r0[kGlobalStart]);
    last = std::max(last, end);
  }
  std::vector<double> gaps;
  for (auto& [sm, spans] : by_sm) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      if (spans[i].first >= spans[i - 1].second) gaps.push_back(double(spans[i].first - spans[i - 1].second) * 1e-3);
  }
  t.sms = static_cast<int>(by_sm.size());
  t.ctas_per_sm = t.sms > 0 ? double(layout.ctas) / t.sms : 0;
  t.setup = spread(setup);
  t.q_load = spread(q_load);
  t.first_s = spread(first_s);
  t.main_loop = spread(main_loop);
  t.per_kv_block = spread(per_block);
  t.epilogue = spread(epilogue);
  t.tile = spread(tile);
  t.fixed = spread(fixed);
  t.q_issue_records = static_cast<int>(q_lead.size());
  t.q_issue_lead = spread(q_lead);
  t.q_issue_to_ready = spread(q_latency);
  t.span_us = last > first ? double(last - first) * 1e-3 : 0;
  t.gap_between_ctas = spread(gaps);
  return t;
}

std::string format_tile_times(const TileTimes& t) {
  const auto row = [](const char* name, const Spread& s) {
    return fmt::format("  {:<34} {:9.2f} {:9.2f} {:9.2f}\n", name, s.p10, s.median, s.p90);
  };
  std::string out = fmt::format("  {} records on {} SMs ({:.2f} CTAs per SM), grid span {:.1f} us\n", t.records, t.sms,
                                t.ctas_per_sm, t.span_us);
  out += fmt::format("  {:<34} {:>9} {:>9} {:>9}\n", "phase (us)", "p10", "median", "p90");
  out += row("setup (entry -> consumer start)", t.setup);
  out += row("Q load (-> Q in shared memory)", t.q_load);
  if (t.q_issue_records > 0) {
    out += row("  Q issued before the tile's start", t.q_issue_lead);
    out += row("  Q issue -> Q in shared memory", t.q_issue_to_ready);
  }
  out += row("first S (-> first Q K^T done)", t.first_s);
  out += row("main loop (-> last P V done)", t.main_loop);
  out += row("  per key block after the first", t.per_kv_block);
  out += row("epilogue (-> output written)", t.epilogue);
  out += row("tile (entry -> output written)", t.tile);
  out += row("fixed (tile - main loop)", t.fixed);
  out += row("gap between CTAs on an SM", t.gap_between_ctas);
  return out;
}

}  // namespace attnprof::fused
