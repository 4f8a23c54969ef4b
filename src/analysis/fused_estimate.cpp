// The fused-attention time model (see fused_estimate.h).
#include "analysis/fused_estimate.h"

#include "analysis/analysis.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace attnprof {
namespace {

// Sustained fused forward rates, TFLOP/s (FLOPs 4*B*H*Sq*Skv*D, causal
// counted as computed). sm_90: cuDNN 9.19 on an H200, mid-range of
// BENCHMARKS.md's 30-shape table (D64 263-454, D128 326-647); fp32 from the
// memory-efficient fp32 kernel of the corpus (gpt2_sdpa_fp32_train: 72.5 us for
// B2 H8 S512 D64, one partial wave). sm_80 and others: FlashAttention-2's published A100 rates,
// scaled by the 16-bit tensor-core peak of the architecture.
struct Rate {
  int min_cc;
  double d64, d128, fp32;
  double tb_per_s;  // peak memory bandwidth where the trace does not name its GPU (the datasheets': H200, ...)
};
constexpr Rate kRates[] = {
    {90, 330, 480, 30, 4.8}, {89, 110, 140, 8, 0.9}, {86, 60, 75, 5, 0.9},
    {80, 170, 210, 8, 1.9},  {75, 35, 40, 3, 0.6},   {70, 50, 60, 4, 0.85},
};

Rate rate_for(int cc) {
  for (const Rate& r : kRates)
    if (cc >= r.min_cc) return r;
  return kRates[std::size(kRates) - 1];
}

constexpr double kLaunchNs = 3000;  // a fused kernel's fixed cost: launch, prologue, epilogue (H200, 1-wave shapes)
// The share of a GPU's peak memory bandwidth a kernel streaming K and V sustains: an H200's device-to-device
// copy measured 4.3 of its 4.8 TB/s here.
constexpr double kSustainedBandwidth = 0.9;

}  // namespace

std::int64_t model_fused_ns(const AttentionShape& s, bool backward, Precision precision, const DeviceSummary& device) {
  if (!s.known()) return 0;
  int cc = device.compute_major * 10 + device.compute_minor;
  if (cc <= 0) cc = 90;
  const int sms = device.num_sms > 0 ? device.num_sms : 132;
  const Rate r = rate_for(cc);
  const double tb_per_s = kSustainedBandwidth * device_memory_tb_per_s(device);
  const bool fp32 = precision == Precision::FP32;
  const double tflops = fp32 ? r.fp32 : (s.head_dim <= 64 ? r.d64 : r.d128);
  // Tiles of 128 query rows per head (64 rows, two per SM, in fp32), in waves
  // over the SMs: at least one whole wave, which lasts as long as its longest
  // tile (all keys); past one wave, tiles stream through (half the keys on
  // average when causal). Checked against the fused twins of 28 programs kept
  // out of the repository: BENCHMARKS.md.
  // In double throughout: record_shapes values are the trace's, not checked to be sane.
  const double rows = std::min(fp32 ? 64.0 : 128.0, static_cast<double>(s.q_len));
  const double slots = static_cast<double>(sms) * (fp32 ? 2 : 1);
  const double tiles =
      static_cast<double>(s.batch) * static_cast<double>(s.q_heads) * std::ceil(static_cast<double>(s.q_len) / rows);
  const double waves = std::max(1.0, tiles / slots);
  double keys = static_cast<double>(s.kv_len);
  if (s.causal.value_or(false) && tiles > slots) keys = keys / 2 + 64;
  // Decode (a few query rows, fewer tiles than SMs): the keys are split over the idle SMs
  // (split-KV). Longer queries are not: cuDNN ran B2 H8 S512 (64 tiles) in one pass, 8 us.
  const bool split_kv = tiles < slots && s.q_len <= 64;
  if (split_kv) keys = std::max(64.0, keys * tiles / slots);
  const double tile_ns = rows * keys * static_cast<double>(s.head_dim) * 4.0 / (tflops * 1e12 / slots) * 1e9;
  // Every kernel reads q, k, v and writes the output once: no faster than the memory allows.
  const double memory_ns = attention_bytes(s, precision) / (tb_per_s * 1e12) * 1e9;
  double ns = kLaunchNs + std::max(waves * tile_ns, memory_ns);
  // Decode split over the KV sequence (a few query rows against a longer cache): its partial results
  // are combined by a second kernel (FlashDecoding; cuDNN ran two kernels a decode call on the H200).
  if (!backward && split_kv && s.q_len <= kDecodeMaxQueryRows && s.kv_len > s.q_len) ns += kLaunchNs;
  // Backward: 2.5x the matmul work at about 3/4 of the rate, twice the bytes, and three kernels.
  if (backward) ns = 3 * kLaunchNs + std::max(waves * tile_ns * 2.5 / 0.75, 2 * memory_ns);
  return static_cast<std::int64_t>(std::min(ns, 9.2e18));
}

double attention_bytes(const AttentionShape& s, Precision precision) {
  if (!s.known()) return 0;
  const auto n = [](std::int64_t v) { return static_cast<double>(v); };
  const double kv_heads = n(s.kv_heads > 0 ? s.kv_heads : s.q_heads);
  const double kv_batch = n(s.kv_batch > 0 ? s.kv_batch : s.batch);  // a shared pool: read once at most
  return n(bytes_per_element(precision == Precision::Unknown ? Precision::BF16 : precision)) * n(s.head_dim) *
         (2.0 * n(s.batch) * n(s.q_heads) * n(s.q_len) + 2.0 * kv_batch * kv_heads * n(s.kv_len));
}

double device_memory_tb_per_s(const DeviceSummary& device) {
  const double peak = peak_memory_tb_per_s(device.name);
  if (peak > 0) return peak;
  const int cc = device.compute_major * 10 + device.compute_minor;
  return rate_for(cc > 0 ? cc : 90).tb_per_s;
}

double peak_memory_tb_per_s(std::string_view name) {
  // Longest names first where one holds another ("H100 NVL" before "H100").
  struct Peak {
    std::string_view part;
    double tb_per_s;
  };
  constexpr Peak kPeaks[] = {
      {"GB200", 8.0},       {"B200", 8.0},
      {"B100", 8.0},        {"GH200", 4.0},
      {"H200", 4.8},        {"H100 NVL", 3.9},
      {"H100 PCIe", 2.0},   {"H100", 3.35},
      {"H800", 3.35},       {"A100-SXM4-80GB", 2.039},
      {"A100 80GB", 1.935}, {"A100-PCIE-40GB", 1.555},
      {"A100", 1.555},      {"A800", 2.039},
      {"L40S", 0.864},      {"L40", 0.864},
      {"L4", 0.3},          {"A10G", 0.6},
      {"A10", 0.6},         {"RTX 4090", 1.008},
      {"RTX 3090", 0.936},  {"V100", 0.9},
      {"T4", 0.32},
  };
  for (const Peak& p : kPeaks)
    if (name.find(p.part) != std::string_view::npos) return p.tb_per_s;
  return 0;
}

MeasuredFused::MeasuredFused(std::span<const AttentionCall> calls) {
  std::vector<std::pair<Entry, std::vector<std::int64_t>>> found;
  for (const AttentionCall& c : calls) {
    if (c.impl != AttentionImpl::Fused || !c.shape.known()) continue;
    auto it = std::find_if(found.begin(), found.end(),
                           [&](const auto& f) { return f.first.pass == c.pass && f.first.shape == c.shape; });
    if (it == found.end()) it = found.insert(found.end(), {Entry{c.pass, c.shape, 0}, {}});
    it->second.push_back(c.kernel_ns);
  }
  for (auto& [entry, times] : found) {
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
    entry.median_ns = times[times.size() / 2];
    entries_.push_back(std::move(entry));
  }
}

std::optional<std::int64_t> MeasuredFused::find(AttentionPass pass, const AttentionShape& shape) const {
  // Unknowns match anything: eager attention's causality and kv heads are not in its trace.
  const auto same = [](const AttentionShape& a, const AttentionShape& b) {
    return a.batch == b.batch && a.q_heads == b.q_heads && a.q_len == b.q_len && a.kv_len == b.kv_len &&
           a.head_dim == b.head_dim && (a.kv_heads == 0 || b.kv_heads == 0 || a.kv_heads == b.kv_heads) &&
           (!a.causal || !b.causal || *a.causal == *b.causal);
  };
  for (const Entry& e : entries_)
    if (e.pass == pass && same(e.shape, shape)) return e.median_ns;
  return std::nullopt;
}

FusedEstimate estimate_fused(const AttentionCall& call, const MeasuredFused& measured, const DeviceSummary& device) {
  if (call.shape.known()) {
    if (const auto ns = measured.find(call.pass, call.shape)) return {*ns, FusedEstimate::From::Measured};
    // FP32 attention gains little from an FP32 fused kernel (RoBERTa, GPT-2 in the
    // corpus: 0.8-1.0x of the unfused time): the fix is 16 bits and a fused kernel, so
    // that is what is modelled.
    const Precision modelled = call.precision == Precision::FP32 ? Precision::BF16 : call.precision;
    return {model_fused_ns(call.shape, call.pass == AttentionPass::Backward, modelled, device),
            FusedEstimate::From::Shape};
  }
  // No shape: a fused kernel does the call's matmuls on 16-bit tensor cores at
  // about cuBLAS's rate, skipping the masked half when the mask was causal.
  // Plus one launch: small calls are launch-bound (B2 H8 S512: 4 us of matmuls, 8 us fused).
  std::int64_t ns = call.gemm16_ns;
  if (call.causal_mask) ns /= 2;
  return {ns + static_cast<std::int64_t>(kLaunchNs), FusedEstimate::From::Matmuls};
}

std::string describe(const FusedEstimate& e, const AttentionCall& call) {
  switch (e.from) {
    case FusedEstimate::From::Measured:
      return "measured: fused calls of the same shape in this trace";
    case FusedEstimate::From::Shape: {
      const AttentionShape& s = call.shape;
      // A mask of unknown kind added over a longer cache is a decoder's (queries last: replay_causality),
      // under which the queries read about all of the cache, as the not-causal model counts them.
      const bool over_cache = call.mask_pass && s.q_len > 0 && s.q_len < s.kv_len;
      const char* mask = s.causal     ? (*s.causal ? " causal" : " not causal")
                         : over_cache ? ", a mask over the cache: every key read"
                                      : ", causality unknown: taken as not causal";
      return fmt::format("modelled from the shape (B{} H{}/{} Sq{} Skv{} D{}{}{}; {})", s.batch, s.q_heads,
                         s.kv_heads > 0 ? std::to_string(s.kv_heads) : std::string("?"), s.q_len, s.kv_len, s.head_dim,
                         mask, call.precision == Precision::FP32 ? ", in bf16" : "", s.source());
    }
    case FusedEstimate::From::Matmuls:
      return "from the call's own matmuls as 16-bit tensor-core work (no shapes in the trace)";
  }
  return "";
}

}  // namespace attnprof
