// The one table of tile choices for the fused attention kernels, per code path and
// head dim. CUDA-free, so the CPU tests can check it; the kernels are instantiated
// from these rows and nothing else picks a tile size.
#pragma once

#include <array>
#include <string_view>

namespace attnprof::fused {

// portable: mma.sync (sm_80+). hopper: TMA + wgmma + warp specialization (sm_90a), the
// fastest measured schedule (docs/fused-kernel.md). The others are Hopper versions kept for
// the ladder and experiments, with the hopper rows' tiles: hopper_v2 (S, softmax, P V in
// turn inside each warpgroup), hopper_overlap (version 3: S of step n overlaps P V of step
// n-1 inside a warpgroup), hopper_m192 (version 4: version 2 with 3 consumer warpgroups,
// BM=192, head dim 64 only), hopper_v5 (version 3 with the consumer warpgroups taking
// turns at the tensor cores; the output stored from registers) and hopper_v6 (version 5
// with the output through shared memory and a TMA store; one CTA per tile) and hopper_v7
// (version 6 as a persistent grid) and hopper_v8 (version 7 with two Q buffers, so the
// next tile's Q loads earlier, and the output store's wait deferred), hopper_v9 (version 6
// with 176-key blocks at head dim 128: its own table row; version 6 at 64) and hopper_v10
// (version 7 with the 176-key row and one 64-row output staging buffer the consumer
// warpgroups take in turn: a BM-row one does not fit beside the larger ring; version 8 at
// 64) and hopper_v11 (version 8 on its own rows: 160-key blocks at head dim 128, with the
// output staged in the tile's own Q buffer; a 3-stage ring at 64) and hopper_v13 (version 8 or 11,
// as the default picks them, with the static rounds' remainder split along the keys:
// split_tail_units) and hopper_v18 (version 8, or 11 at head dim 64, with each warpgroup's last
// key block cut to the half its rows see where they see no more, the causal diagonal's, and the
// warpgroups' rows swapped in a causal pair's second tile) and hopper_v26 (version 18, or 11 at head
// dim 64, with the zeros of tiles that see no key kept in the output staging rows from one such tile
// to the next) and hopper_v27 (version 6 with a warpgroup whose rows all lie past q_len left out:
// the last row of tiles when q_len % 128 is 1..64) and hopper_v29 (version 18, or 11 at head dim 64,
// with a dynamic causal tile scheduler: single tiles drawn longest first from an atomic counter).
// hopper picks version 6, 8, 11, 13, 18, 26, 27 or 29 per call (use_persistent,
// persistent_fills_better, persistent_rounds_pay and full_rounds_pay, persistent_v11, version 13 where
// its tail splits at D=128, version 29 for causal calls where use_dynamic says, version 18 for other
// causal calls that would run version 8, version 26 where most tiles see no key: keeps_zeros, version
// 27 for version 6's calls with such a warpgroup).
enum class Path : int {
  Automatic = 0,
  Portable = 1,
  Hopper = 2,
  HopperOverlap = 3,
  HopperM192 = 4,
  HopperV2 = 5,
  HopperV5 = 6,
  HopperV6 = 7,
  HopperV7 = 8,
  HopperV8 = 9,
  HopperV9 = 10,
  HopperV10 = 11,
  HopperV11 = 12,
  HopperV13 = 13,
  HopperV18 = 18,
  HopperV26 = 26,
  HopperV27 = 27,
  HopperV29 = 29
};

struct PathName {
  Path path;
  std::string_view name;
};
// The names the lab's --path and `attnprof bench --impl fused:<name>` take.
inline constexpr std::array<PathName, 18> kPathNames{{{Path::Automatic, "auto"},
                                                      {Path::Portable, "portable"},
                                                      {Path::Hopper, "hopper"},
                                                      {Path::HopperOverlap, "hopper_overlap"},
                                                      {Path::HopperM192, "hopper_m192"},
                                                      {Path::HopperV2, "hopper_v2"},
                                                      {Path::HopperV5, "hopper_v5"},
                                                      {Path::HopperV6, "hopper_v6"},
                                                      {Path::HopperV7, "hopper_v7"},
                                                      {Path::HopperV8, "hopper_v8"},
                                                      {Path::HopperV9, "hopper_v9"},
                                                      {Path::HopperV10, "hopper_v10"},
                                                      {Path::HopperV11, "hopper_v11"},
                                                      {Path::HopperV13, "hopper_v13"},
                                                      {Path::HopperV18, "hopper_v18"},
                                                      {Path::HopperV26, "hopper_v26"},
                                                      {Path::HopperV27, "hopper_v27"},
                                                      {Path::HopperV29, "hopper_v29"}}};
constexpr std::string_view path_name(Path p) {
  for (const PathName& n : kPathNames)
    if (n.path == p) return n.name;
  return "auto";
}

struct TileConfig {
  Path path;
  int head_dim;
  int block_m;    // query rows per CTA
  int block_n;    // keys per inner-loop step
  int stages;     // K/V shared-memory ring depth (hopper); 1 for portable
  int threads;    // CTA size
  int consumers;  // hopper: consumer warpgroups (each owns 64 query rows)
  int min_q_len;  // row applies from this query length on (the longest matching wins)
};

// Measured on an H200 (docs/fused-kernel.md, run 3): for D=64, BM=192 (3 consumer
// warpgroups) is up to 12% faster from 2048 query rows on (one row 2% slower), and
// up to 11% slower below (short causal sequences: too few, too uneven tiles).
inline constexpr TileConfig kTileTable[] = {
    // path           D    BM   BN  st threads consumers min_q_len
    {Path::Portable, 64, 64, 64, 1, 128, 0, 0},
    {Path::Portable, 128, 64, 64, 1, 128, 0, 0},
    {Path::Hopper, 64, 128, 128, 2, 384, 2, 0},
    {Path::Hopper, 64, 192, 128, 2, 512, 3, 2048},
    {Path::Hopper, 128, 128, 128, 2, 384, 2, 0},
    // FlashAttention-3's D=128 tile without causal masking: fewer key blocks, so fewer softmax
    // passes, barriers and rescales per FLOP (hopper_v9 and hopper_v10; 210 KB of shared memory).
    {Path::HopperV9, 128, 128, 176, 2, 384, 2, 0},
    // Version 8 on larger rings: 160-key blocks at D=128 (fewer per-block costs, a remainder under 2%
    // of the keys where 176 left 3%; two Q buffers and the ring fill 226 KB, so the output is staged
    // in the tile's own Q buffer) and three 128-key stages at D=64.
    {Path::HopperV11, 64, 128, 128, 3, 384, 2, 0},
    {Path::HopperV11, 128, 128, 160, 2, 384, 2, 0},
};

// The row for (path, head_dim, q_len); a row with head_dim 0 when none exists.
constexpr TileConfig tile_for(Path path, int head_dim, int q_len = 0) {
  TileConfig best{path, 0, 0, 0, 0, 0, 0, -1};
  for (const TileConfig& t : kTileTable)
    if (t.path == path && t.head_dim == head_dim && t.min_q_len <= q_len && t.min_q_len > best.min_q_len) best = t;
  return best;
}

// Whether the default Hopper path runs the persistent kernel (version 8 since run 19, before it 7;
// two consumer warpgroups) rather than one CTA per tile (version 6, the table's rows) for this
// call. Measured on an H200 (docs/fused-kernel.md, version 7, run 12): persistence wins where tiles are short, since
// it hides each tile's start-up and Q load, and on causal D=128 up to 8k rows (its work items
// of two tiles balance the rounds); one CTA per tile wins for long D=64 sequences, where it has
// three consumer warpgroups (the persistent kernel's state spills with three), and ties at D=128
// causal at 16k (run 12: v7 585, v6 590; v6 587-633 over runs 9-12). D=128 full attention takes
// version 8 at every length since run 21 (S 8k 626 against v6's 600 TFLOP/s, S 16k 633 against
// 612; version 7 had tied with v6 there).
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

// Where use_persistent keeps one CTA per tile for full attention (D=64 from 2048 rows: version 6
// with three consumer warpgroups, BM 192), the persistent grid (BM 128) still wins when version 6's
// last wave leaves enough SMs idle: run 21 measured version 6 5% faster per tile than version 8
// with both grids 97% full (B8 H32 S2048 D64: 460 against 438 TFLOP/s), and 3% slower with
// version 6's waves 89% full (B4 H16 S2048 D64: 704 CTAs on 132 SMs, 430 against 443). Equal
// tiles only: causal tiles differ in length, and the hardware's scheduling evens them out.
constexpr double kOneCtaPerTileEdge = 1.05;
constexpr bool persistent_fills_better(long long v6_ctas, long long persistent_items, int sms) {
  return wave_fill(persistent_items, sms) > kOneCtaPerTileEdge * wave_fill(v6_ctas, sms);
}

// Which persistent kernel, where use_persistent picks one: version 11 (its own rows) or 8. Run 23
// (v8 against v11 in one process): at D=64 the 3-stage ring +2.3% and +1.2% at S512 (causal, full),
// within 0.7% elsewhere (S 1k-4k); at D=128 full attention the 160-key blocks +0.6% at 8k and
// +1.7% at 16k keys, within 0.4% at 2k-4k, and 7.5% slower at 1k, where 1024 keys make 6.4 blocks
// of 160 (one 40% full).
constexpr bool persistent_v11(int head_dim, int kv_len, bool causal) {
  return head_dim == 64 || (!causal && kv_len >= 8192);
}

// Whether the persistent grid's static rounds are full enough: `items` work items (tiles, or
// causal pairs) dealt to `sms` CTAs in rounds keep at least 90% of the CTA-rounds busy. It was the
// default's guard for every persistent call until runs 65-66 measured the edge (causal:
// persistent_rounds_pay, full attention: full_rounds_pay); version 26's pick (keeps_zeros) still
// asks it, as measured there (1024 items on 132 SMs).
constexpr bool persistent_rounds_full(long long items, int sms) {
  if (items <= 0 || sms <= 0) return false;
  const long long rounds = (items + sms - 1) / sms;
  return items * 10 >= rounds * sms * 9;
}

// Whether the persistent grid's static rounds beat one CTA per tile (version 6) for a causal call:
// `items` work items (pairs of tiles, or one middle tile) of `item_blocks` key blocks and `item_tiles`
// tiles each on `sms` CTAs. The persistent grid takes its rounds times an item's blocks; version 6
// balances its tiles over the SMs as they free, but pays each tile's start-up, first S and epilogue,
// which the persistent grid hides: about kTileFixedBlocks key blocks' time per tile (docs/fused-kernel.md,
// the issue 13 fit: ~2 key-block iterations per tile). So the rounds pay where their fill,
// items / (rounds x sms), is at least item_blocks / (item_blocks + item_tiles x kTileFixedBlocks).
// Run 65 (version 18 at D=128 and 11 at D=64 against version 6 in one process): the persistent grid
// 10-13% faster at 79-89% fills from S512 to S1024 (pairs of 5 and 9 blocks), 2% at S2049 (87%,
// pairs of 18 blocks), 3% slower at S4097 (82%, pairs of 34); the fixed 90% of persistent_rounds_full
// had sent all of them but the last to version 6.
inline constexpr int kTileFixedBlocks = 2;
constexpr bool persistent_rounds_pay(long long items, int sms, long long item_blocks, int item_tiles) {
  if (items <= 0 || sms <= 0 || item_blocks <= 0 || item_tiles <= 0) return false;
  const long long rounds = (items + sms - 1) / sms;
  return items * (item_blocks + item_tiles * kTileFixedBlocks) >= rounds * sms * item_blocks;
}

// Whether the persistent grid beats one CTA per tile (version 6) for full attention with `items`
// tiles on `sms` CTAs. Its tiles are equal, so version 6 (the same 128-row tiles wherever
// use_persistent or persistent_fills_better picked the persistent grid) runs in as many waves as the
// persistent grid has rounds, and pays each tile's fixed cost besides: the persistent grid wins from
// a second round on, however full the last (run 66: +10-20% at 73-89% fills from S512 to S1024, D=64
// and 128, where persistent_rounds_full's 90% had sent them to version 6); with one round each CTA
// has one tile either way (B1 H12 S1024, 96 tiles: version 6 0.6% faster).
constexpr bool full_rounds_pay(long long items, int sms) { return sms > 0 && items > sms; }

// Whether the default runs version 26 (keyless tiles' zeros kept in the staging rows; persistent) for
// a causal call with `tiles` query tiles of 128 rows per head, `keyless` of them seeing no key
// (bottom-right, kv_len well under q_len), over `heads` heads (batch x heads): where most tiles see
// no key, if use_persistent picks the persistent grid (runs 63-64: +6.6% over version 18 at B2 H16
// Sq8192/Skv512 D128, +2.5% at Sq4096/Skv1024; 0.7% under it at Sq8192/Skv4096, half the tiles
// keyless), or else where the tiles with keys fit in one round of `sms` CTAs, so that the static
// rounds are balanced (run 64, D=64 B2 H16 Sq8192/Skv512: 45.0 TFLOP/s against version 6's 31.9; at
// Sq16384/Skv8192 version 6's dynamic balance of the tiles with keys won, 558 against 426 at D=128).
constexpr bool keeps_zeros(int keyless, int tiles, long long heads, bool persistent, int sms) {
  if (keyless <= 0 || 2LL * keyless <= tiles) return false;
  return persistent || static_cast<long long>(tiles - keyless) * heads <= sms;
}

// Version 13's split tail. The persistent grid deals `items` equal work items (full attention's
// tiles) of `blocks` key blocks each to `ctas` CTAs in static rounds, and the last round's
// remainder, items % ctas, leaves the other CTAs idle for a whole item: 68 of 132 busy for the
// 2048 items of every 16k-token shape in issue 13's sweep. Instead, those items' key blocks are
// dealt to all CTAs in contiguous ranges of `units` blocks (stream-K's tail, FlashAttention's
// split-KV): a range that crosses an item boundary makes two pieces, and the piece holding an
// item's first block combines the others' partial outputs. Returns units, or 0 for no split:
// when nothing remains, or a range would save fewer than kMinTailSaving key blocks against a whole
// item. Run 31 (D=128 full attention, 2048 items on 132 SMs, against version 8 or 11 in one
// process) measured the split's own cost at about 8 key blocks' time (the flags' memset, a second
// piece's first S and epilogue, the partials' trip through L2, CTAs reaching the tail at different
// times): saving 3 blocks of 8 lost 3%, 7 of 16 lost 0.4%, 15 of 32 won 1.3%, 25 of 52 1.8%, 49 of
// 103 2.1%. `min_units` below kMinTailUnits, with no saving asked for, is for the checks (any split
// that leaves a range shorter than an item).
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

// Version 29's sections (fwd_sm90.cu, drawn_tile): the (batch, head)s whose tiles it draws longest
// first before the next section's. At most as many as keep their K and V within kSectionBytes of L2
// (FlashAttention-3's 32 MB of the H100's 50 MB; the H200 has the same L2), in whole GQA groups of
// `group` query heads over one K/V head; run 8 drew every head's tiles longest first, and each key
// block came from HBM (1.71 us against 1.62). And the sections even: the last section's longest tiles
// are drawn when the others' are done, so a small last section ends the call up to a whole tile late
// (run 71: 64 heads of S2049 in sections of 31, 31 and 2 gained 0.7% where the static rounds leave 17%
// of the CTAs' time idle; 64 in sections of 22, 22 and 20 instead).
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

// Whether the default runs version 29 (the dynamic causal scheduler) for a causal call whose tiles all
// see a key: `tiles` query tiles of 128 rows in all (batch x heads x tiles per head) on `sms` CTAs, of
// `q_len` rows at `head_dim`. Runs 71-72 against the default's kernels in one process: +3.2-5.2% at D=64
// S512-S4k (version 11), +1.6-3.6% at D=128 S2k with GQA (version 18), +10% at S2049 and +8.6% at S4097
// (versions 18 and 27: the static rounds leave up to 17% of the CTAs' time idle there), +1.5-3% over
// version 6 at D=128 S16k-S32k. Slower: at D=128 below 2048 rows (grid run 72, against runs 59-61:
// 3.5% at S1k, 6% at S512 and S1000), at B128 H32 S256 (5.6%, two tiles per head: the pairs read their
// key block 0 twice from L2, the drawn tiles a round apart, through HBM at 3.8 TB/s), 3.6% under version
// 6's three consumer warpgroups at D=64 S8k, and 3.6-11% under version 6 where every tile has a CTA of
// its own (B2 H16 Sq512/Skv8192, B1 H8 S2048: 128 tiles).
constexpr bool use_dynamic(int head_dim, int q_len, long long tiles, int sms) {
  if (tiles <= sms) return false;
  return head_dim == 128 ? q_len >= 2048 : q_len >= 512 && q_len < 8192;
}

// A hopper row with another number of consumer warpgroups (64 query rows each).
constexpr TileConfig with_consumers(TileConfig t, int consumers) {
  t.consumers = consumers;
  t.block_m = 64 * consumers;
  t.threads = 128 * (consumers + 1);
  return t;
}

// setmaxnreg split of the 64K-register file for a Hopper CTA (multiples of 8): 176-key blocks hold
// 88 score registers per consumer thread beside D=128's 64 output ones, and take FlashAttention-3's
// 240 (the producer only issues TMA).
constexpr int producer_registers(const TileConfig& t) { return t.consumers == 2 && t.block_n <= 128 ? 40 : 24; }
constexpr int consumer_registers(const TileConfig& t) {
  return t.consumers == 2 ? (t.block_n <= 128 ? 232 : 240) : 160;
}

// Dynamic shared memory a config needs, in bytes (16-bit elements).
constexpr int shared_bytes(const TileConfig& t) {
  if (t.path == Path::Portable) {
    const int row = (t.head_dim + 8) * 2;  // padded row: ldmatrix without bank conflicts
    return (t.block_m + 2 * t.block_n) * row;
  }
  // Q tile + K and V rings, 128B-swizzled, plus 1 KB for alignment and barriers.
  return (t.block_m + 2 * t.stages * t.block_n) * t.head_dim * 2 + 2048;
}

}  // namespace attnprof::fused
