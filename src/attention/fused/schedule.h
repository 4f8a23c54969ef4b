// Which fused kernel runs a call: the schedules a user can name, and the per-call rules that pick
// one (choose_schedule). CUDA-free, so the CPU tests check every rule and every pick; the Hopper
// launch (hopper_launch.cu) only carries a Schedule out. Each rule's comment says what it encodes;
// the measurements behind them are in docs/fused-kernel.md ("The schedule rules, and why").
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>

#include "fused_params.h"
#include "tile_table.h"

namespace attnprof::fused {

// What `attnprof bench --impl fused:<name>`, the lab's --path and the tests choose. auto: hopper on
// sm_90, portable elsewhere. hopper: the per-call rules. The others force one Hopper grid and let
// the rules choose the rest (rows, variants); a call the forced schedule cannot take runs on the
// persistent grid.
enum class Path : int {
  Automatic = 0,
  Portable,
  Hopper,
  OneTile,     // one CTA per query tile; the hardware balances the tiles as SMs free
  Persistent,  // one CTA per SM walking the tiles (causal: pairs of tiles) in static rounds
  SplitTail,   // persistent, full attention's last partial round split along the keys
  Dynamic,     // persistent, causal tiles drawn longest first from a counter
  KeepZeros,   // persistent, causal, keyless tiles' zeros kept staged between such tiles
  Decode,      // the decode kernel (decode_kernel.cu): a KV head's query heads packed, split along the keys
};

struct PathName {
  Path path;
  std::string_view name;
  std::string_view what;
};
inline constexpr std::array<PathName, 9> kPathNames{{
    {Path::Automatic, "auto", "hopper on sm_90, portable elsewhere"},
    {Path::Portable, "portable", "mma.sync, sm_80+"},
    {Path::Hopper, "hopper", "TMA + wgmma + warp specialization, the schedule chosen per call"},
    {Path::OneTile, "one_tile", "hopper, one CTA per query tile"},
    {Path::Persistent, "persistent", "hopper, a CTA per SM walking the tiles in static rounds"},
    {Path::SplitTail, "split_tail", "persistent, the last round split along the keys (full attention, D=128)"},
    {Path::Dynamic, "dynamic", "persistent, causal tiles drawn longest first"},
    {Path::KeepZeros, "keep_zeros", "persistent, causal, keyless tiles' zeros kept staged"},
    {Path::Decode, "decode", "mma.sync, sm_80+: a KV head's query heads in one tile, the keys split over CTAs"},
}};
constexpr std::string_view path_name(Path p) {
  for (const PathName& n : kPathNames)
    if (n.path == p) return n.name;
  return "auto";
}

// Which main kernel the backward runs (fused_attention.h's backward): bwd_sm80.cu's (mma.sync, any
// sm_80+ device) or bwd_sm90.cu's (TMA + wgmma, sm_90 only; docs/hopper-backward.md). automatic is
// kAutomaticBackward, the one place the product's choice is made: the Hopper kernel, measured 1.28-2.21x
// the portable one on an H100 (BENCHMARKS.md), on sm_90 devices, the portable one elsewhere. The bench
// names them as rows, fused:portable and fused:hopper.
enum class BackwardPath : int { Automatic = 0, Portable, Hopper };
inline constexpr BackwardPath kAutomaticBackward = BackwardPath::Hopper;

// Explicit launch overrides for the checks and the lab (the product passes none): the persistent
// grid capped at persistent_ctas CTAs, so small cases make each CTA walk several tiles; the split
// tail's ranges of at least split_tail_min_units key blocks (below kMinTailUnits any tail whose ranges
// are shorter than an item splits); the dynamic scheduler's (batch, head)s per section; the decode
// kernel's splits of a unit's keys (decode_plan's choice replaced: the lab's sweep), and its K/V copied by
// cp.async where the GPU has TMA (the two side by side).
struct LaunchOverrides {
  int persistent_ctas = 0;
  int split_tail_min_units = 0;
  int section_heads = 0;
  int decode_splits = 0;
  bool decode_cp_async = false;  // the decode kernel's K/V by 16-byte cp.async where bulk copies would run
};

// --- The rules -------------------------------------------------------------------------------

// Whether the persistent grid (two consumer warpgroups) rather than one CTA per tile runs the call:
// persistence wins where tiles are short, since it hides each tile's start-up and Q load, and on causal
// D=128 up to 8k rows (its pairs of tiles balance the rounds); one CTA per tile wins for long D=64
// sequences, where it has three consumer warpgroups (the persistent loop's state spills with three),
// and ties at D=128 causal from 16k. D=128 full attention: persistent at every length.
constexpr bool use_persistent(int head_dim, int q_len, bool causal) {
  if (head_dim == 128) return !causal || q_len < 16384;
  return q_len < (causal ? 8192 : 2048);
}

// The share of CTA slots busy when `ctas` equal CTAs run in waves of one per SM (or `ctas` equal
// work items in a persistent grid's static rounds): the last wave's idle SMs are the rest.
constexpr double wave_fill(long long ctas, int sms) {
  if (ctas <= 0 || sms <= 0) return 0.0;
  const long long waves = (ctas + sms - 1) / sms;
  return double(ctas) / double(waves * sms);
}

// Where use_persistent keeps one CTA per tile for full attention (D=64 from 2048 rows, three consumer
// warpgroups, BM 192), the persistent grid (BM 128) still wins when the one-tile grid's last wave
// leaves enough SMs idle: one CTA per tile measured 5% faster per tile with both grids 97% full, and
// 3% slower with its waves 89% full. Equal tiles only: causal tiles differ in length, and the
// hardware's scheduling evens them out.
constexpr double kOneCtaPerTileEdge = 1.05;
constexpr bool persistent_fills_better(long long one_tile_ctas, long long persistent_items, int sms) {
  return wave_fill(persistent_items, sms) > kOneCtaPerTileEdge * wave_fill(one_tile_ctas, sms);
}

// Whether the persistent grid takes the wide rows (tile_table.h): at D=64 the 3-stage ring (+1-2% at
// S512, within noise elsewhere); at D=128 full attention the 160-key blocks from 8192 keys (+0.6-1.7%),
// not below (1024 keys make 6.4 blocks of 160, one 40% full: 7.5% slower).
constexpr bool wide_rows_pay(int head_dim, int kv_len, bool causal) {
  return head_dim == 64 || (!causal && kv_len >= 8192);
}

// Whether the persistent grid's static rounds keep at least 90% of the CTA-rounds busy: `items` work
// items dealt to `sms` CTAs. The kept-zeros pick asks it (measured at 1024 items on 132 SMs).
constexpr bool persistent_rounds_full(long long items, int sms) {
  if (items <= 0 || sms <= 0) return false;
  const long long rounds = (items + sms - 1) / sms;
  return items * 10 >= rounds * sms * 9;
}

// Whether the persistent grid's static rounds beat one CTA per tile for a causal call: `items` work
// items (pairs of tiles, or one middle tile) of `item_blocks` key blocks and `item_tiles` tiles each on
// `sms` CTAs. The persistent grid takes its rounds times an item's blocks; one CTA per tile balances its
// tiles over the SMs as they free, but pays each tile's start-up, first S and epilogue, about
// kTileFixedBlocks key blocks' time, which the persistent grid hides. So the rounds pay where their fill,
// items / (rounds x sms), is at least item_blocks / (item_blocks + item_tiles x kTileFixedBlocks): the
// persistent grid measured 10-13% faster at 79-89% fills from S512 to S1024, 2% at S2049 (87%), 3%
// slower at S4097 (82%, pairs of 34 blocks).
inline constexpr int kTileFixedBlocks = 2;
constexpr bool persistent_rounds_pay(long long items, int sms, long long item_blocks, int item_tiles) {
  if (items <= 0 || sms <= 0 || item_blocks <= 0 || item_tiles <= 0) return false;
  const long long rounds = (items + sms - 1) / sms;
  return items * (item_blocks + item_tiles * kTileFixedBlocks) >= rounds * sms * item_blocks;
}

// Whether the persistent grid beats one CTA per tile for full attention with `items` tiles on `sms`
// CTAs. Equal tiles quantize alike on both grids, and one CTA per tile pays each tile's fixed cost
// besides: the persistent grid wins from a second round on (+10-20% at 73-89% fills from S512 to
// S1024); with one round each CTA has one tile either way (a tie).
constexpr bool full_rounds_pay(long long items, int sms) { return sms > 0 && items > sms; }

// Whether the kept-zeros kernel runs a causal call with `tiles` query tiles of 128 rows per head,
// `keyless` of them seeing no key (bottom-right, kv_len well under q_len), over `heads` heads (batch x
// heads): where most tiles see no key, if the persistent grid was chosen (+6.6% at B2 H16 Sq8192/Skv512
// D128, +2.5% at Sq4096/Skv1024; 0.7% slower at Sq8192/Skv4096, half the tiles keyless), or else where
// the tiles with keys fit in one round of `sms` CTAs, so the static rounds are balanced (at
// Sq16384/Skv8192 one CTA per tile's dynamic balance of the tiles with keys won).
constexpr bool keeps_zeros(int keyless, int tiles, long long heads, bool persistent, int sms) {
  if (keyless <= 0 || 2LL * keyless <= tiles) return false;
  return persistent || static_cast<long long>(tiles - keyless) * heads <= sms;
}

// The split tail. The persistent grid deals `items` equal work items (full attention's tiles) of
// `blocks` key blocks each to `ctas` CTAs in static rounds, and the last round's remainder, items %
// ctas, leaves the other CTAs idle for a whole item (68 of 132 busy for the 2048 items of a 16k-token
// shape). Instead those items' key blocks are dealt to all CTAs in contiguous ranges of `units` blocks
// (stream-K's tail, FlashAttention's split-KV): a range that crosses an item boundary makes two pieces,
// and the piece holding an item's first block combines the others' partial outputs. Returns units, or 0
// for no split: when nothing remains, or a range would save fewer than kMinTailSaving key blocks
// against a whole item. The split's own cost is about 8 key blocks' time (the flags' memset, a second
// piece's first S and epilogue, the partials' trip through L2, CTAs reaching the tail at different
// times): saving 3 blocks of 8 lost 3%, 7 of 16 lost 0.4%, 15 of 32 won 1.3%, 49 of 103 2.1%.
// `min_units` below kMinTailUnits, with no saving asked for, is for the checks (any split that leaves
// a range shorter than an item).
inline constexpr int kMinTailUnits = 4;
inline constexpr int kMinTailSaving = 12;
constexpr int split_tail_units(long long items, int ctas, int blocks, int min_units = kMinTailUnits) {
  if (items <= 0 || ctas <= 0 || blocks <= 0 || min_units <= 0) return 0;
  const long long rest = items % ctas;
  if (rest == 0 || rest * blocks + ctas >= (1LL << 31)) return 0;  // the kernel counts them in 32 bits
  long long units = (rest * blocks + ctas - 1) / ctas;
  if (units < min_units) units = min_units;
  if (units >= blocks) return 0;
  if (min_units >= kMinTailUnits && blocks - units < kMinTailSaving) return 0;
  return int(units);
}

// The dynamic scheduler's sections (drawn_tile): the (batch, head)s whose tiles it draws longest first
// before the next section's. At most as many as keep their K and V within kSectionBytes of L2
// (FlashAttention-3's 32 MB of the H100's 50 MB; the H200 has the same L2), in whole GQA groups of
// `group` query heads over one K/V head: drawn over every head, each key block came from HBM (1.71 us
// against 1.62). And the sections even: the last section's longest tiles are drawn when the others'
// are done, so a small last section ends the call up to a whole tile late (64 heads in sections of 31,
// 31 and 2 gained 0.7% where 22, 22 and 20 gain 10%).
inline constexpr long long kSectionBytes = 32LL << 20;
constexpr int dynamic_section_heads(long long kv_len, int head_dim, int group, long long heads) {
  if (heads <= 0) return 1;
  if (group < 1) group = 1;
  const long long kv_head_bytes = kv_len * head_dim * 2 * 2;  // K and V, 16-bit
  long long kv_heads = kv_head_bytes > 0 ? kSectionBytes / kv_head_bytes : heads;
  if (kv_heads < 1) kv_heads = 1;
  const long long groups = (heads + group - 1) / group;  // K/V heads of the call (batch x kv_heads)
  if (kv_heads >= groups) return int(heads);
  const long long sections = (groups + kv_heads - 1) / kv_heads;
  return int((groups + sections - 1) / sections * group);
}

// Whether the dynamic scheduler runs a causal call whose tiles all see a key: `tiles` query tiles of
// 128 rows in all (batch x heads x tiles per head) on `sms` CTAs, of `q_len` rows at `head_dim`. Faster
// than the static rounds by 3.2-5.2% at D=64 S512-S4k, 1.6-3.6% at D=128 S2k with GQA, 10% at S2049 and
// 8.6% at S4097 (where the static rounds leave up to 17% of the CTAs' time idle), 1.5-3% over one CTA
// per tile at D=128 S16k-S32k. Slower at D=128 below 2048 rows (3.5-6%), at B128 H32 S256 (two tiles per
// head: the pairs read their key block 0 twice from L2, drawn tiles a round apart through HBM), 3.6%
// under three consumer warpgroups at D=64 S8k, and 3.6-11% where every tile has a CTA of its own.
constexpr bool use_dynamic(int head_dim, int q_len, long long tiles, int sms) {
  if (tiles <= sms) return false;
  return head_dim == 128 ? q_len >= 2048 : q_len >= 512 && q_len < 8192;
}

// --- The decode kernel ----------------------------------------------------------------------

// Short queries against long keys (decode, speculative decode, chunked appends) are memory-bound: the
// work is reading K and V once. The decode kernel (decode_kernel.cu) packs the q_len x group query rows
// that share a KV head into one tile (kDecodeChunkRows rows a CTA; more make row chunks, each reading
// that head's K/V), streams the keys by TMA (cp.async off sm_90) through kDecodeStages stages, splits a head's keys
// over several CTAs when batch x KV heads does not fill the GPU, and merges the splits' partial outputs
// by their log-sum-exp in the last CTA of each head to finish. It also takes every paged or ragged call
// (AttentionParams' block_table, seq_lens), whatever q_len: the other kernels read dense K/V only.
inline constexpr int kDecodeChunkRows = 64;
inline constexpr int kDecodeThreads = 128;
inline constexpr int kDecodeStages = 3;
inline constexpr int kDecodeCtasPerSm = 2;  // kDecodeStages stages of K and V fit twice in 227 KB
inline constexpr int kDecodeMaxSplits = 128;
constexpr int decode_block_n(int head_dim) { return head_dim == 128 ? 64 : 128; }  // 32 KB of K and V a stage
constexpr int decode_shared_bytes(int head_dim) {  // the stages and room to align them to 1024 bytes
  return kDecodeStages * 2 * decode_block_n(head_dim) * head_dim * 2 + 1024;
}
inline constexpr int kDecodeMinTmaPage = 16;  // shorter pages are copied with cp.async

// The keys of one TMA box of the decode kernel's K/V (sm_90), 0 where TMA cannot box them and cp.async
// copies: a dense tensor's (page_size 0) a whole key block; a paged cache's a block where a page holds
// whole blocks, a page where a block holds whole pages of kDecodeMinTmaPage keys or more (four to eight
// boxes a block at pages of 16).
constexpr int decode_tma_box_keys(int head_dim, int page_size) {
  const int block = decode_block_n(head_dim);
  if (page_size == 0) return block;
  if (page_size % block == 0) return block;
  if (page_size >= kDecodeMinTmaPage && block % page_size == 0) return page_size;
  return 0;
}

// Whether the decode kernel runs a dense call: the query rows of a KV head fit one tile (q_len x
// group <= kDecodeChunkRows) and q_len is short (<= 16), where the prefill kernels' 128-row tiles would
// carry a few useful rows each and read K/V once per query head.
constexpr bool use_decode(int q_len, int group) { return q_len <= 16 && q_len * group <= kDecodeChunkRows; }

// Whether the decode kernel runs p on `path`: every paged or ragged call (the other kernels read dense
// K/V only), Decode forced, and the short-query calls use_decode names when the kernel is chosen per
// call (Automatic). A forced prefill path (hopper, portable, ...) keeps its kernel on dense calls, so
// `bench --impl fused,fused:hopper` sets the two side by side.
constexpr bool takes_decode(const Params& p, Path path) {
  if (p.block_table || p.seq_lens || path == Path::Decode) return true;
  return path == Path::Automatic && p.kv_heads > 0 && p.heads % p.kv_heads == 0 &&
         use_decode(p.q_len, p.heads / p.kv_heads);
}

// How the decode kernel covers a call: `units` (batch x KV heads x row chunks) each split into `splits`
// CTAs of `blocks_per_split` key blocks.
struct DecodePlan {
  int rows = 0;        // query rows a KV head has: q_len x group
  int chunk_rows = 0;  // rows a CTA holds (<= kDecodeChunkRows)
  int row_tiles = 0;   // 16-row mma tiles of a chunk: 1, 2 or 4
  int row_chunks = 0;
  int block_n = 0;
  int blocks = 0;  // key blocks of the longest sequence
  long long units = 0;
  int splits = 1;
  int blocks_per_split = 0;
};

// The splits with which the busiest SM streams the fewest key blocks: CTAs go round the SMs, so with s
// splits an SM takes ceil(units x s / SMs) CTAs of ceil(blocks / s) blocks each (counting only counts
// that keep one wave of CTAs and change the blocks per split). Among the counts that tie, the most that
// keep kDecodeLongSplit blocks a split (two CTAs an SM hide each other's waits over a long stream), else the
// fewest (a short split's prologue and its share of the merge cost more than a second CTA gains). No split
// where the units alone fill 80% of the `slots` (SMs x CTAs per SM); each split two key blocks at least.
// Measured (H100, 2026-12-06, the lab's sweep, docs/fused-kernel.md): ahead of FlashAttention-2's fullest
// wave (num_splits_heuristic, which this replaces) by 2-8% at batch 1-2.
inline constexpr int kDecodeLongSplit = 32;
constexpr int decode_splits(long long units, int slots, int blocks, int max_splits = kDecodeMaxSplits) {
  if (units <= 0 || slots <= 0 || blocks <= 1 || units * 5 >= slots * 4LL) return 1;
  const long long sms = std::max(1, slots / kDecodeCtasPerSm);
  const int most = std::min(max_splits, std::max(1, blocks / 2));
  long long fewest = 0;
  int first = 0, longest = 0;  // the fewest splits at that load; the most with long splits
  for (int s = 1; s <= most; ++s) {
    const int per = (blocks + s - 1) / s;
    // Counted: one wave of CTAs (more waves cut the keys finer for a few blocks less on the busiest SM and
    // pay a prologue and a partial a CTA: B1 H32/8 Skv128k at 82 splits would load 125 blocks against 126,
    // and 96-128 splits measured 5% slower than 32), and a cut that fewer splits do not make.
    if (s > 1 && (units * s > slots || (blocks + per - 1) / per != s)) continue;
    const long long load = (units * s + sms - 1) / sms * per;
    if (first == 0 || load < fewest) {
      fewest = load;
      first = s;
      longest = 0;
    } else if (load != fewest) {
      continue;
    }
    if (per >= kDecodeLongSplit) longest = s;
  }
  return longest > first ? longest : first;
}

// `forced_splits` > 0 replaces decode_splits' choice (LaunchOverrides::decode_splits), each split one key
// block at least.
constexpr DecodePlan decode_plan(const Params& p, int sms, int max_splits = kDecodeMaxSplits, int forced_splits = 0) {
  DecodePlan d;
  const int group = p.kv_heads > 0 ? p.heads / p.kv_heads : 1;
  d.rows = p.q_len * group;
  d.chunk_rows = std::min(d.rows, kDecodeChunkRows);
  const int tiles = (d.chunk_rows + 15) / 16;
  d.row_tiles = tiles <= 1 ? 1 : tiles <= 2 ? 2 : 4;
  d.row_chunks = (d.rows + kDecodeChunkRows - 1) / kDecodeChunkRows;
  d.block_n = decode_block_n(p.head_dim);
  d.blocks = (p.kv_len + d.block_n - 1) / d.block_n;
  d.units = static_cast<long long>(p.batch) * p.kv_heads * d.row_chunks;
  d.splits = forced_splits > 0 ? std::max(1, std::min(forced_splits, d.blocks))
                               : decode_splits(d.units, sms * kDecodeCtasPerSm, d.blocks, max_splits);
  d.blocks_per_split = d.splits > 1 ? (d.blocks + d.splits - 1) / d.splits : d.blocks;
  if (d.splits > 1) d.splits = (d.blocks + d.blocks_per_split - 1) / d.blocks_per_split;  // none empty
  return d;
}

// The decode kernel's scratch for a plan of more than one split: each split's normalized partial
// output (fp32, chunk_rows x head_dim) and log-sum-exp, then a counter per unit (zeroed before the launch
// where the stream's counters cannot serve: stream_counters.h).
constexpr std::size_t decode_partial_bytes(const DecodePlan& d, int head_dim) {
  return std::size_t(d.units) * std::size_t(d.splits) * std::size_t(d.chunk_rows) * std::size_t(head_dim + 1) * 4;
}
constexpr std::size_t decode_scratch_bytes(const DecodePlan& d, int head_dim) {
  if (d.splits <= 1) return 0;
  return (decode_partial_bytes(d, head_dim) + 255) / 256 * 256 + std::size_t(d.units) * sizeof(int);
}

// --- The choice ------------------------------------------------------------------------------

// Who computes which tile: one CTA per tile; a CTA per SM in static rounds (pairs of tiles when
// causal); a CTA per SM drawing single tiles from a counter.
enum class Grid : int { OneTile, Persistent, Dynamic };

// The kernel's variants on its roles (bits of a KernelChoice's features).
namespace feature {
inline constexpr unsigned kSplitTail = 1u;      // persistent full attention: the last round's key blocks over every CTA
inline constexpr unsigned kHalfDiagonal = 2u;   // a warpgroup's last key block cut to the half its rows see (causal)
inline constexpr unsigned kKeepZeros = 4u;      // keyless tiles' zeros kept in the staging rows between such tiles
inline constexpr unsigned kSkipIdleGroup = 8u;  // one CTA per tile: a warpgroup whose rows all lie past q_len leaves
}  // namespace feature

// One compiled Hopper kernel (per dtype): the product's list is kProductKernels.
struct KernelChoice {
  Grid grid;
  TileRows rows;
  int consumers;
  unsigned features;
  int head_dim;
};
constexpr bool operator==(const KernelChoice& a, const KernelChoice& b) {
  return a.grid == b.grid && a.rows == b.rows && a.consumers == b.consumers && a.features == b.features &&
         a.head_dim == b.head_dim;
}

// Every Hopper kernel the product compiles (each for bf16 and fp16): what choose_schedule can return,
// for every call and every Path. Nothing else is instantiated outside the lab.
inline constexpr KernelChoice kProductKernels[] = {
    {Grid::OneTile, TileRows::Hopper, 2, 0, 64},
    {Grid::OneTile, TileRows::Hopper, 3, 0, 64},
    {Grid::OneTile, TileRows::Hopper, 2, 0, 128},
    {Grid::OneTile, TileRows::Hopper, 2, feature::kSkipIdleGroup, 64},
    {Grid::OneTile, TileRows::Hopper, 2, feature::kSkipIdleGroup, 128},
    {Grid::Persistent, TileRows::HopperWide, 2, 0, 64},
    {Grid::Persistent, TileRows::HopperWide, 2, 0, 128},
    {Grid::Persistent, TileRows::Hopper, 2, 0, 128},
    {Grid::Persistent, TileRows::Hopper, 2, feature::kHalfDiagonal, 128},
    {Grid::Persistent, TileRows::HopperWide, 2, feature::kSplitTail, 128},
    {Grid::Persistent, TileRows::Hopper, 2, feature::kSplitTail, 128},
    {Grid::Persistent, TileRows::HopperWide, 2, feature::kKeepZeros, 64},
    {Grid::Persistent, TileRows::Hopper, 2, feature::kHalfDiagonal | feature::kKeepZeros, 128},
    {Grid::Dynamic, TileRows::HopperWide, 2, 0, 64},
    {Grid::Dynamic, TileRows::Hopper, 2, feature::kHalfDiagonal, 128},
};
inline constexpr int kProductKernelCount = int(sizeof(kProductKernels) / sizeof(kProductKernels[0]));

// A Hopper call's schedule: the kernel and what its launch sets (the grid, the split's ranges, the
// dynamic scheduler's sections).
struct Schedule {
  KernelChoice kernel{};
  int ctas = 0;           // the persistent grids' CTAs (one per SM, or the overrides' cap); one-tile: 0
  int tail_units = 0;     // kSplitTail: key blocks per CTA in the split tail
  int section_heads = 0;  // Grid::Dynamic: (batch, head)s per section
};

// The schedule of a call p (sizes and scratch as the launch will see them) on a device of `sms` SMs,
// for `path` (Hopper: the rules; OneTile .. KeepZeros: that grid where it can take the call). The
// rules, in order: the split tail where the persistent grid's last round splits (before the rounds
// rule, so calls with fewer items than SMs spread over every SM); the dynamic scheduler for causal calls
// (use_dynamic); kept zeros where most tiles see no key (keeps_zeros); then the persistent grid where
// use_persistent and its rounds pay, else one CTA per tile. Every result is in kProductKernels.
// Calls without keys never reach it (the portable path writes their zeros).
Schedule choose_schedule(const Params& p, Path path, int sms, const LaunchOverrides& overrides = {});

// Index of the schedule's kernel in kProductKernels, or -1.
int product_kernel_index(const KernelChoice& k);

// The scratch the Hopper kernels may use for p on `sms` SMs (the split tail's partials and flags, or
// the dynamic scheduler's counter; 0: none, and p.tail_workspace may stay null).
std::size_t schedule_scratch(const Params& p, int sms, const LaunchOverrides& overrides = {});

}  // namespace attnprof::fused
