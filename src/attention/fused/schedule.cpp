// choose_schedule: the per-call rules of schedule.h, in the order the default asks them.
#include "schedule.h"

#include <algorithm>

namespace attnprof::fused {

namespace {

// The persistent grid's CTAs: one per SM, or the overrides' cap.
int grid_ctas(int sms, const LaunchOverrides& o) {
  return o.persistent_ctas > 0 && sms > 0 ? std::min(sms, o.persistent_ctas) : sms;
}

// The persistent grid's rows for p (two consumer warpgroups, 128-row tiles either way).
TileRows persistent_rows(const Params& p) {
  return wide_rows_pay(p.head_dim, p.kv_len, p.causal) ? TileRows::HopperWide : TileRows::Hopper;
}

// The split tail's key blocks per CTA for full attention on `ctas` CTAs (0: no split).
int tail_units(const Params& p, int ctas, const LaunchOverrides& o) {
  if (p.causal || p.kv_len <= 0 || ctas <= 0) return 0;
  const TileConfig t = with_consumers(tile_for(persistent_rows(p), p.head_dim), 2);
  const int blocks = (p.kv_len + t.block_n - 1) / t.block_n;
  const int floor = o.split_tail_min_units > 0 ? o.split_tail_min_units : kMinTailUnits;
  return split_tail_units(persistent_items(p, t.block_m), ctas, blocks, floor);
}

// The split tail's scratch: full attention at head dim 128 only (at 64 its kernel ran 5-9% slower
// even unsplit: ptxas scheduled the exponentials worse).
std::size_t tail_scratch(const Params& p, int ctas, const LaunchOverrides& o) {
  if (p.head_dim != 128 || tail_units(p, ctas, o) == 0) return 0;
  return split_tail_bytes(ctas, p.head_dim);
}

// The dynamic scheduler's counter: causal calls with keys whose tiles all see one (a drawn keyless
// tile would be announced with no Q behind it).
constexpr std::size_t kDynamicScratch = 16;
std::size_t dynamic_scratch(const Params& p) {
  return p.causal && p.kv_len > 0 && keyless_tiles(p, 128) == 0 ? kDynamicScratch : 0;
}

bool has_scratch(const Params& p, std::size_t bytes) {
  return bytes > 0 && p.tail_workspace && p.tail_workspace_bytes >= bytes;
}

// The split tail, where it splits and the workspace holds its partials (tail_scratch is 0 otherwise,
// and at head dim 64).
bool takes_split_tail(const Params& p, int ctas, const LaunchOverrides& o) {
  return has_scratch(p, tail_scratch(p, ctas, o));
}
KernelChoice split_tail(const Params& p) {
  return {Grid::Persistent, persistent_rows(p), 2, feature::kSplitTail, p.head_dim};
}

KernelChoice one_tile(const Params& p) {
  const int consumers = tile_for(TileRows::Hopper, p.head_dim, p.q_len).consumers;
  const int rest = p.q_len % 128;
  const bool idle_group = consumers == 2 && rest > 0 && rest <= 64;
  return {Grid::OneTile, TileRows::Hopper, consumers, idle_group ? feature::kSkipIdleGroup : 0u, p.head_dim};
}

// The persistent grid: the wide rows where they pay, else the 128-key rows with the causal diagonal's
// half skipped (+0.5-2% from S1k).
KernelChoice persistent(const Params& p) {
  const TileRows rows = persistent_rows(p);
  const bool half = p.causal && rows == TileRows::Hopper;
  return {Grid::Persistent, rows, 2, half ? feature::kHalfDiagonal : 0u, p.head_dim};
}

// The causal kernels' rows: the wide ones at head dim 64, the halved diagonal's at 128.
KernelChoice causal_rows(const Params& p, Grid grid, unsigned extra) {
  if (p.head_dim == 64) return {grid, TileRows::HopperWide, 2, extra, 64};
  return {grid, TileRows::Hopper, 2, feature::kHalfDiagonal | extra, 128};
}

// Whether the persistent grid's rounds pay for a causal call (persistent_rounds_pay): its items are
// pairs of query tiles M-1-k and k, the first the longest; with one tile per head the middle tile alone.
bool causal_rounds_pay(const Params& p, long long items, int sms) {
  const int m_tiles = (p.q_len + 127) / 128;
  const long long first = key_blocks(p, 128, 128), last = key_blocks(p, m_tiles * 128, 128);
  return m_tiles > 1 ? persistent_rounds_pay(items, sms, first + last, 2) : persistent_rounds_pay(items, sms, last, 1);
}

KernelChoice by_rules(const Params& p, int sms, int ctas, const LaunchOverrides& o) {
  const long long items = persistent_items(p, 128);
  bool use_grid = use_persistent(p.head_dim, p.q_len, p.causal);
  if (!use_grid && !p.causal) {  // equal tiles: compare the two grids' last waves
    const long long one_tile_ctas = persistent_items(p, tile_for(TileRows::Hopper, p.head_dim, p.q_len).block_m);
    use_grid = persistent_fills_better(one_tile_ctas, items, sms);
  }
  if (use_grid && takes_split_tail(p, ctas, o)) return split_tail(p);
  const int tiles_per_head = (p.q_len + 127) / 128;
  const long long heads = static_cast<long long>(p.heads) * p.batch;
  if (p.causal && has_scratch(p, dynamic_scratch(p)) && use_dynamic(p.head_dim, p.q_len, tiles_per_head * heads, sms))
    return causal_rows(p, Grid::Dynamic, 0);
  if (p.causal && persistent_rounds_full(items, sms) &&
      keeps_zeros(keyless_tiles(p, 128), tiles_per_head, heads, use_grid, sms))
    return causal_rows(p, Grid::Persistent, feature::kKeepZeros);
  if (!use_grid || !(p.causal ? causal_rounds_pay(p, items, sms) : full_rounds_pay(items, sms))) return one_tile(p);
  return persistent(p);
}

KernelChoice forced(const Params& p, Path path, int ctas, const LaunchOverrides& o) {
  switch (path) {
    case Path::OneTile:
      return one_tile(p);
    case Path::SplitTail:
      return takes_split_tail(p, ctas, o) ? split_tail(p) : persistent(p);
    case Path::Dynamic:
      return has_scratch(p, dynamic_scratch(p)) ? causal_rows(p, Grid::Dynamic, 0) : persistent(p);
    case Path::KeepZeros:
      return p.causal ? causal_rows(p, Grid::Persistent, feature::kKeepZeros) : persistent(p);
    default:
      return persistent(p);
  }
}

}  // namespace

Schedule choose_schedule(const Params& p, Path path, int sms, const LaunchOverrides& o) {
  const int ctas = grid_ctas(sms, o);
  Schedule s;
  s.kernel = path == Path::Hopper || path == Path::Automatic ? by_rules(p, sms, ctas, o) : forced(p, path, ctas, o);
  const long long heads = static_cast<long long>(p.heads) * p.batch;
  switch (s.kernel.grid) {
    case Grid::OneTile:
      break;
    case Grid::Persistent:
      if (s.kernel.features & feature::kSplitTail) {
        s.tail_units = tail_units(p, ctas, o);
        s.ctas = ctas;  // with fewer items than CTAs the whole call is the tail, on every CTA
      } else {
        s.ctas = int(std::min<long long>(persistent_items(p, 128), ctas));
      }
      break;
    case Grid::Dynamic: {
      s.ctas = int(std::min<long long>((p.q_len + 127) / 128 * heads, ctas));
      s.section_heads = o.section_heads > 0 ? int(std::min<long long>(o.section_heads, heads))
                                            : dynamic_section_heads(p.kv_len, p.head_dim, p.heads / p.kv_heads, heads);
      break;
    }
  }
  return s;
}

int product_kernel_index(const KernelChoice& k) {
  for (int i = 0; i < kProductKernelCount; ++i)
    if (kProductKernels[i] == k) return i;
  return -1;
}

std::size_t schedule_scratch(const Params& p, int sms, const LaunchOverrides& o) {
  if (p.head_dim != 64 && p.head_dim != 128) return 0;
  return std::max(tail_scratch(p, grid_ctas(sms, o), o), dynamic_scratch(p));
}

}  // namespace attnprof::fused
