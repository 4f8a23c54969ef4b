#include "analysis/kernel_shapes.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "analysis/kernel_classifier.h"

namespace attnprof {
namespace {

// The top-level arguments of the template whose '<' is at `open` ("" when unbalanced).
std::vector<std::string_view> template_args(std::string_view name, std::size_t open) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = open + 1;
  for (std::size_t i = open; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') {
      ++depth;
    } else if (c == '>' || c == ')') {
      if (--depth == 0) {
        out.push_back(name.substr(start, i - start));
        return out;
      }
    } else if (c == ',' && depth == 1) {
      out.push_back(name.substr(start, i - start));
      start = i + 2 <= name.size() && name[i + 1] == ' ' ? i + 2 : i + 1;
    }
  }
  return {};
}

std::int64_t number(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() ? v : -1;
}

bool is_true(std::string_view s) { return s == "true" || s == "1"; }

struct Launch {
  std::string_view name;
  std::array<std::int32_t, 3> grid;
  std::array<std::int32_t, 3> block;
};

std::vector<Launch> launches(const AttentionCall& c, const TraceIndex& index) {
  std::vector<Launch> out;
  for (const std::size_t a : c.activities) {
    const GpuActivity& act = index.activities()[a];
    const GpuArgs* g = index.trace().args(index.event(act));
    if (g == nullptr || g->grid[0] <= 0 || g->block[0] <= 0) continue;
    out.push_back({index.name(act), g->grid, g->block});
  }
  return out;
}

// FlashAttention 2's forward kernels (PyTorch's pytorch_flash and the flash-attn package).
bool flash_forward(const Launch& k, bool combined, AttentionShape& s) {
  const bool split_kv = k.name.find("flash_fwd_splitkv_kernel<") != std::string_view::npos;
  if (!split_kv && k.name.find("flash_fwd_kernel<") == std::string_view::npos) return false;
  const auto args = kernel_template_args(k.name, split_kv ? "flash_fwd_splitkv_kernel<" : "flash_fwd_kernel<");
  if (args.size() < 3) return false;
  const auto traits = kernel_template_args(args[0], "Flash_fwd_kernel_traits<");
  if (traits.size() < 2) return false;
  const std::int64_t d = number(traits[0]), block_m = number(traits[1]);
  if (d <= 0 || block_m <= 0) return false;
  // flash_fwd_kernel<Traits, Is_dropout, Is_causal, ...>; flash_fwd_splitkv_kernel<Traits, Is_causal, Is_local,
  // Has_alibi, Is_even_MN, Is_even_K, Is_softcap, Split, ...>: split along the keys, the grid is
  // (m blocks, splits, batch x heads), else (m blocks, batch, heads).
  const bool causal = is_true(args[split_kv ? 1 : 2]);
  // Split along the keys: its combine kernel runs (the template's Split flag moved between versions).
  const bool split = split_kv && combined;
  s.head_dim = d;
  s.causal = causal;
  s.q_len = static_cast<std::int64_t>(k.grid[0]) * block_m;
  s.kv_len = s.q_len;
  if (split) {
    s.batch = k.grid[2];
    s.q_heads = 1;
    s.batch_x_heads = true;
  } else {
    s.batch = k.grid[1];
    s.q_heads = k.grid[2];
  }
  s.inferred = fmt::format(
      "FlashAttention forward grid {}x{}x{} with Flash_fwd_kernel_traits<{}, {}, ...>: {}, D={}, S in {}..{} (taken "
      "as {}, S_kv as S), is_causal={}",
      k.grid[0], k.grid[1], k.grid[2], d, block_m,
      split ? fmt::format("batch x heads={} (split along the keys)", s.batch)
            : fmt::format("B={} H={}", s.batch, s.q_heads),
      d, s.q_len - block_m + 1, s.q_len, s.q_len, causal);
  return true;
}

// xFormers/PyTorch memory-efficient forward: fmha_cutlassF_*(AttentionKernel<T, Arch, aligned, kQueriesPerBlock,
// kKeysPerBlock, kMaxK, ...>), grid (ceil(S / kQueriesPerBlock), heads, batch).
bool mem_efficient_forward(const Launch& k, AttentionShape& s) {
  if (k.name.find("fmha_cutlassF") == std::string_view::npos) return false;
  const auto args = kernel_template_args(k.name, "AttentionKernel<");
  if (args.size() < 6) return false;
  const std::int64_t block_q = number(args[3]), max_k = number(args[5]);
  if (block_q <= 0 || max_k <= 0) return false;
  s.batch = k.grid[2];
  s.q_heads = k.grid[1];
  s.q_len = static_cast<std::int64_t>(k.grid[0]) * block_q;
  s.kv_len = s.q_len;
  // kMaxK is the head dim's bound: 32/64/128 for the register-held kernels (head dims are those in
  // practice), 65536 for the one that streams from global memory (D > 128): then unknown.
  s.head_dim = max_k <= 256 ? max_k : 0;
  s.inferred = fmt::format(
      "memory-efficient forward grid {}x{}x{} with {} queries a block and kMaxK {}: B={} H={}, S in {}..{} (taken as "
      "{}, S_kv as S), {}",
      k.grid[0], k.grid[1], k.grid[2], block_q, max_k, s.batch, s.q_heads, s.q_len - block_q + 1, s.q_len, s.q_len,
      s.head_dim > 0 ? fmt::format("D at most {} (taken as it)", max_k) : std::string("D not said (above 128)"));
  return true;
}

// cuDNN's decode kernel (a generated SDPA forward of 16 query rows a tile, read_attention_kernel_name): grid
// (splits of the keys, K/V heads, batch), the head dim in its name; its combine, cudnn::fusion::
// lean_reduction_kernel, runs a CTA per query head and sequence: grid (1, heads, batch). The key length is
// not in either (cuDNN chooses the splits); the query length is taken as 1, a token a step.
bool cudnn_decode(const std::vector<Launch>& ks, AttentionShape& s) {
  const Launch* main = nullptr;
  AttentionKernelName said;
  for (const Launch& k : ks) {
    said = read_attention_kernel_name(k.name);
    if (said.tile_rows > 0 && said.tile_rows <= 16 && said.head_dim > 0) {
      main = &k;
      break;
    }
  }
  if (main == nullptr) return false;
  const Launch* combine = nullptr;
  for (const Launch& k : ks)
    if (k.name.find("cudnn::fusion::lean_reduction_kernel") != std::string_view::npos && k.grid[2] == main->grid[2])
      combine = &k;
  s.batch = main->grid[2];
  s.kv_heads = main->grid[1];
  s.q_heads = combine ? combine->grid[1] : 0;
  // The query heads of a K/V head share its tile's rows: a group that does not divide or fit is no such
  // packing, and neither count is taken.
  if (s.q_heads > 0 && (s.q_heads % s.kv_heads != 0 || s.q_heads / s.kv_heads > said.tile_rows))
    s.q_heads = s.kv_heads = 0;
  s.head_dim = said.head_dim;
  s.q_len = 1;
  s.inferred = fmt::format(
      "cuDNN decode grid {}x{}x{} (key splits, K/V heads, batch) with a tile of {} query rows: B={}{}, D={} from its "
      "name; {}; the query length taken as 1 (at most {} rows a K/V head); the key length and causality are not in "
      "the kernels",
      main->grid[0], main->grid[1], main->grid[2], said.tile_rows, s.batch,
      s.kv_heads > 0 ? fmt::format(" H_kv={}", s.kv_heads) : std::string(), s.head_dim,
      s.q_heads > 0 ? fmt::format("H={} from its combine's grid {}x{}x{}", s.q_heads, combine->grid[0],
                                  combine->grid[1], combine->grid[2])
      : combine     ? std::string("the heads not said (its combine's grid does not pack into the tile)")
                    : std::string("the query heads not said (no combine: the keys were not split)"),
      said.tile_rows);
  return true;
}

// Unfused and SDPA-math: the score rows and the key length from the softmax and the score-sized passes.
struct ScoreRows {
  std::int64_t rows_lo = 0, rows_hi = 0;  // batch x heads x query rows
  std::int64_t kv_lo = 0, kv_hi = 0;      // keys a row
  std::int64_t pass_lo = 0, pass_hi = 0;  // the score-sized pass's elements (0: none)
  std::string how;                        // which kernels said it
};

// The keys a row that a pass of [lo, hi] elements over [rows_lo, rows_hi] rows implies, within [kv_lo, kv_hi];
// none where they do not meet.
std::optional<std::pair<std::int64_t, std::int64_t>> keys_of_pass(std::int64_t lo, std::int64_t hi,
                                                                  std::int64_t rows_lo, std::int64_t rows_hi,
                                                                  std::int64_t kv_lo, std::int64_t kv_hi) {
  const std::int64_t k_lo = std::max(kv_lo, (lo + rows_hi - 1) / rows_hi);
  const std::int64_t k_hi = std::min(kv_hi, hi / rows_lo);
  if (k_lo > k_hi) return std::nullopt;
  return std::make_pair(k_lo, k_hi);
}

// Over more than 2^31 score elements PyTorch runs the softmax and each pass as several launches of one
// kernel, a 32-bit-indexable piece each: a call's launches of its softmax kernel are pieces of its one
// softmax, and consecutive launches of one elementwise kernel are pieces of one pass. The key length from
// the score-sized pass: for self-attention the largest elementwise pass (the scores outsize every other
// tensor of the call when S exceeds the head dim); for a few queries against a cache (`cached`) the
// smallest pass of rows x S_kv elements with S_kv in the softmax's range (copies of K and V, rows x S_kv x
// D, are larger there). False where no softmax sizes the rows or nothing bounds the key length.
bool score_rows(const std::vector<Launch>& ks, bool cached, ScoreRows& out) {
  std::int64_t rows_lo = 0, rows_hi = 0, kv_lo = 0, kv_hi = 0;
  std::string how;
  // The softmax's rows over its pieces: launches of `name`, each rows_of(launch) rows.
  const auto pieces = [&ks](std::string_view name, auto rows_of) {
    std::pair<std::int64_t, int> sum{0, 0};
    for (const Launch& k : ks)
      if (k.name == name) {
        sum.first += rows_of(k);
        ++sum.second;
      }
    return sum;
  };
  const auto in_pieces = [](int n) { return n > 1 ? fmt::format(" in {} pieces", n) : std::string(); };
  for (const Launch& k : ks) {
    if (const auto args = kernel_template_args(k.name, "softmax_warp_forward<"); args.size() >= 4) {
      const std::int64_t log2 = number(args[3]);
      if (log2 < 0 || log2 > 30 || k.block[1] <= 0) continue;
      const std::int64_t pow2 = std::int64_t{1} << log2;
      const std::int64_t per_block = static_cast<std::int64_t>(k.block[1]) * (pow2 <= 128 ? 2 : 1);
      const auto [rows, n] = pieces(k.name, [per_block](const Launch& x) { return x.grid[0] * per_block; });
      rows_hi = rows;
      rows_lo = rows_hi - per_block + 1;
      kv_lo = pow2 / 2 + 1;
      kv_hi = pow2;
      how = fmt::format("softmax_warp_forward<..., {}> grid {} block {}x{}{}", log2, k.grid[0], k.block[0], k.block[1],
                        in_pieces(n));
      break;
    }
    if (k.name.find("cunn_SoftMaxForward") != std::string_view::npos) {  // one block per row
      const auto [rows, n] = pieces(k.name, [](const Launch& x) { return std::int64_t{x.grid[0]}; });
      rows_lo = rows_hi = rows;
      // PyTorch takes the block softmax for rows the warp softmax does not hold: over 1024 elements, or
      // over 4 kB (fp64 rows of more than 512).
      kv_lo = cached ? 513 : 1;
      kv_hi = std::int64_t{1} << 31;
      how = fmt::format("cunn_SoftMaxForward grid {} (a block per row){}", k.grid[0], in_pieces(n));
      break;
    }
  }
  if (rows_hi <= 0) return false;
  // The passes: elementwise_kernel<threads, items per thread, ...> launches, consecutive ones of one kernel
  // summed, each [elements at least, elements at most] (a block's work rounds it up).
  struct Pass {
    std::int64_t lo, hi, block;
    int pieces;
  };
  std::vector<Pass> passes;
  std::string_view run;  // the kernel of the current run of pieces
  for (const Launch& k : ks) {
    // Only elementwise_kernel<threads, items, ...>, whose template says the work of a block (the
    // vectorized kernels' items per thread depend on the PyTorch version and the element size).
    if (k.name.find("elementwise_kernel<") == std::string_view::npos ||
        k.name.find("vectorized_elementwise_kernel<") != std::string_view::npos ||
        k.name.find("unrolled_elementwise_kernel<") != std::string_view::npos) {
      run = {};
      continue;
    }
    const std::int64_t hi = estimate_elements(k.name, k.grid[0], k.block[0]);
    const std::int64_t block = hi / k.grid[0];
    if (k.name == run && !passes.empty()) {
      passes.back().hi += hi;
      passes.back().lo = passes.back().hi - block + 1;
      ++passes.back().pieces;
    } else {
      passes.push_back({hi - block + 1, hi, block, 1});
    }
    run = k.name;
  }
  const auto keys_of = [&](const Pass& p) { return keys_of_pass(p.lo, p.hi, rows_lo, rows_hi, kv_lo, kv_hi); };
  std::int64_t pass_lo = 0, pass_hi = 0;
  const Pass* score = nullptr;
  for (const Pass& p : passes) {
    if (cached && !keys_of(p)) continue;
    if (score == nullptr || (cached ? p.hi < score->hi : p.hi > score->hi)) score = &p;
  }
  if (score != nullptr) {
    if (const auto keys = keys_of(*score)) {
      std::tie(kv_lo, kv_hi) = *keys;
      pass_lo = score->lo;
      pass_hi = score->hi;
      how += fmt::format(", {} elements a pass (elementwise grid x {}){}", score->hi, score->block,
                         in_pieces(score->pieces));
      if (kv_lo == kv_hi) {  // the rows too, from the pass's size
        rows_lo = std::max(rows_lo, (score->lo + kv_lo - 1) / kv_lo);
        rows_hi = std::min(rows_hi, score->hi / kv_lo);
      }
    }
  }
  if (kv_hi >= (std::int64_t{1} << 31)) return false;  // a block softmax and no pass to size it: nothing certain
  out = {rows_lo, rows_hi, kv_lo, kv_hi, pass_lo, pass_hi, std::move(how)};
  return true;
}

std::string rows_said(const ScoreRows& r) {
  return fmt::format("{}: B x H x S = {}{}, S_kv {}{}", r.how, r.rows_hi,
                     r.rows_lo == r.rows_hi ? "" : fmt::format(" (or down to {})", r.rows_lo), r.kv_hi,
                     r.kv_lo == r.kv_hi ? "" : fmt::format(" (or down to {})", r.kv_lo));
}

// Read as self-attention without a cache: S = S_kv, so the rows are batch x heads x S_kv.
bool unfused(const std::vector<Launch>& ks, AttentionShape& s) {
  ScoreRows r;
  if (!score_rows(ks, false, r)) return false;
  s.kv_len = r.kv_hi;
  s.q_len = r.kv_hi;
  if (r.rows_hi % s.q_len != 0) return false;
  s.batch = r.rows_hi / s.q_len;
  s.q_heads = 1;
  s.batch_x_heads = true;
  s.inferred = fmt::format(
      "{}; S taken as S_kv (self-attention without a cache), batch x heads {}; the head dim is not in these kernels",
      rows_said(r), s.batch);
  return true;
}

// Read as a few queries against a cache of keys (where the self-attention reading failed): rows that are
// `batch_x_heads` times at most `max_q` queries, fewer than the keys.
bool unfused_cached(const std::vector<Launch>& ks, std::int64_t batch_x_heads, std::int64_t max_q, AttentionShape& s) {
  ScoreRows r;
  if (batch_x_heads <= 0 || !score_rows(ks, true, r) || r.rows_hi % batch_x_heads != 0) return false;
  const std::int64_t q = r.rows_hi / batch_x_heads;
  if (q < 1 || q > max_q || q >= r.kv_lo) return false;
  if (r.pass_hi > 0) {  // the rows now exact: the keys again from the pass
    const auto keys = keys_of_pass(r.pass_lo, r.pass_hi, r.rows_hi, r.rows_hi, r.kv_lo, r.kv_hi);
    if (!keys) return false;
    std::tie(r.kv_lo, r.kv_hi) = *keys;
    r.rows_lo = r.rows_hi;
  }
  s.batch = batch_x_heads;
  s.q_heads = 1;
  s.batch_x_heads = true;
  s.q_len = q;
  s.kv_len = r.kv_hi;
  s.inferred = fmt::format(
      "{}; not self-attention (the rows are no whole number of S_kv-key rows): batch x heads {} as the trace's "
      "largest calls', S = {} queries against a cache of S_kv keys; the head dim is not in these kernels",
      rows_said(r), batch_x_heads, q);
  return true;
}

}  // namespace

std::vector<std::string_view> kernel_template_args(std::string_view name, std::string_view templ) {
  const std::size_t at = name.find(templ);
  if (at == std::string_view::npos) return {};
  return template_args(name, at + templ.size() - 1);
}

AttentionShape shape_from_kernels(const AttentionCall& call, const TraceIndex& index) {
  AttentionShape s;
  if (call.pass != AttentionPass::Forward) return s;
  const std::vector<Launch> ks = launches(call, index);
  bool found = false;
  if (call.impl == AttentionImpl::Fused) {
    const bool combined = std::any_of(ks.begin(), ks.end(), [](const Launch& k) {
      return k.name.find("flash_fwd_splitkv_combine_kernel<") != std::string_view::npos;
    });
    for (const Launch& k : ks)
      if ((found = flash_forward(k, combined, s) || mem_efficient_forward(k, s))) break;
    if (!found) found = cudnn_decode(ks, s);
  } else {
    found = unfused(ks, s);
  }
  if (found) s.from = ShapeFrom::Kernels;
  return found ? s : AttentionShape{};
}

AttentionShape cached_shape_from_kernels(const AttentionCall& call, const TraceIndex& index, std::int64_t batch_x_heads,
                                         std::int64_t max_q) {
  AttentionShape s;
  if (call.pass != AttentionPass::Forward || call.impl == AttentionImpl::Fused) return s;
  if (!unfused_cached(launches(call, index), batch_x_heads, max_q, s)) return AttentionShape{};
  s.from = ShapeFrom::Kernels;
  return s;
}

}  // namespace attnprof
