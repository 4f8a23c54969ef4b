#include "analysis/replay.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "analysis/fused_estimate.h"
#include "common/number_text.h"

namespace attnprof {
namespace {

// The region group the replay follows: the one with the most attention time (profiler steps,
// typically); nullptr when no group holds attention.
const GroupStats* main_group(const Analysis& a) {
  const GroupStats* best = nullptr;
  for (const GroupStats& g : a.groups)
    if (g.attention_ns > 0 && (best == nullptr || g.attention_ns > best->attention_ns)) best = &g;
  return best;
}

// The bench dtype: the trace's, bf16 where it does not say.
std::string dtype_of(Precision p) {
  return p == Precision::FP16 || p == Precision::FP32 ? std::string(to_string(p)) : std::string("bf16");
}

// The bench row that reproduces what the trace ran, or "" (with *note saying why none).
std::string own_stand_in(const TraceShape& s, std::string* note) {
  switch (s.impl) {
    case AttentionImpl::SdpaMath:
      *note = "math: PyTorch's SDPA math backend, kernel for kernel";
      return "math";
    case AttentionImpl::Unfused:
      *note = s.fp32_softmax ? "eager-fp32-softmax: Hugging Face eager attention with softmax(dtype=float32), as traced"
                             : "eager: Hugging Face eager attention (matmul, scale, mask, softmax, matmul), as traced";
      return s.fp32_softmax ? "eager-fp32-softmax" : "eager";
    case AttentionImpl::Fused:
      if (s.family == "cuDNN") {
        *note = "cudnn: cuDNN's fused SDPA, as traced";
        return "cudnn";
      }
      *note = fmt::format("the bench has no {} kernel: the alternatives are compared with the traced time",
                          s.family.empty() ? std::string("such") : std::string(s.family));
      return "";
  }
  return "";
}

std::string fix_for(const TraceShape& s) {
  switch (s.impl) {
    case AttentionImpl::SdpaMath:
      return "let SDPA dispatch to a fused backend (cuDNN, flash): drop what forces the math backend "
             "(an sdpa_kernel(MATH) context, fp32 inputs, an unsupported mask)";
    case AttentionImpl::Unfused:
      return s.precision == Precision::FP32
                 ? "use torch.nn.functional.scaled_dot_product_attention (attn_implementation=\"sdpa\" in "
                   "transformers) in bf16: fused kernels take 16-bit inputs"
                 : "use torch.nn.functional.scaled_dot_product_attention (attn_implementation=\"sdpa\" in "
                   "transformers): one fused kernel instead of the matmul-softmax-matmul chain";
    case AttentionImpl::Fused:
      return "already fused: the rows say whether another fused kernel is faster on this GPU";
  }
  return "";
}

std::string bench_command(const ReplayShape& r, const std::string& dtype, bool backward) {
  std::string impls;
  for (const ReplayRow& row : r.rows)
    if (row.dtype == dtype && (!backward || replay_has_backward(row.impl)))
      impls += (impls.empty() ? "" : ",") + row.impl;
  return impls.empty() ? std::string()
                       : replay_bench_command(r.bench.shape, dtype, {r.causal, r.bottom_right}, r.dropout, impls, true,
                                              backward, r.bench.page_size);
}

ReplayShape plan_shape(const TraceShape& s, const ReplayRequest& request, int steps) {
  ReplayShape r;
  r.traced = s;
  r.dtype = dtype_of(s.precision);
  const ReplayCausality mask = replay_causality(s, request.causal);
  r.causal = mask.causal;
  r.bottom_right = mask.bottom_right;
  r.dropout = s.dropout;
  r.traced_ms = s.calls > 0 ? static_cast<double>(s.kernel_ns) / 1e6 / s.calls : 0.0;
  r.calls_per_step = steps > 0 ? static_cast<double>(s.calls) / steps : 0.0;
  r.backward_calls = s.backward_calls;
  r.traced_backward_ms =
      s.backward_calls > 0 ? static_cast<double>(s.backward_kernel_ns) / 1e6 / s.backward_calls : 0.0;
  r.backward_calls_per_step = steps > 0 ? static_cast<double>(s.backward_calls) / steps : 0.0;
  r.source = s.shape.source();
  r.bench = bench_shape_of(s.shape);
  r.source += r.bench.note;
  if (s.decode && s.kv_len_max > s.kv_len_min)
    r.source += fmt::format(
        "; {} calls with KV lengths {} to {} (the cache grows a token a step), replayed at their median {}",
        s.shape.q_len > kDecodeMaxQueryRows ? "packed" : "decode", s.kv_len_min, s.kv_len_max, s.shape.kv_len);
  if (!s.causal_known)
    r.source += request.causal ? "; causal as --causal/--no-causal said (the trace does not say)"
                : mask.assumed ? replay_mask_guess(s.shape)
                               : "; taken as not causal (the trace does not say: --causal to replay it so)";
  if (s.dropout > 0)
    r.source += s.dropout_assumed
                    ? fmt::format(
                          "; attention dropout: a dropout kernel ran in the call, its p is not in the trace: "
                          "{:g} taken (its cost barely depends on p)",
                          s.dropout)
                    : fmt::format("; attention dropout p={:g} (training), replayed with it", s.dropout);
  r.fix = fix_for(s);
  const std::string own = own_stand_in(s, &r.own_note);
  if (s.backward_calls > 0)
    r.own_backward_note =
        own.empty() ? "none: the alternatives' backward is compared with the traced backward time"
        : replay_has_backward(own)
            ? own + "'s backward: " +
                  (own == "cudnn"   ? std::string("cuDNN's fused SDPA backward, as traced")
                   : own == "fused" ? std::string("the project's fused backward, as traced")
                                    : std::string("autograd's kernels through the same ops, as traced"))
            : fmt::format(
                  "none (the bench has no {} backward): the alternatives' backward is compared with the "
                  "traced backward time",
                  own);
  // The fused alternatives take 16-bit inputs: an fp32 trace's run in bf16, which is the fix.
  const std::string alt_dtype = r.dtype == "fp32" ? "bf16" : r.dtype;
  const auto make_row = [](std::string impl, std::string dtype, bool is_own) {
    ReplayRow x;
    x.impl = std::move(impl);
    x.dtype = std::move(dtype);
    x.own = is_own;
    return x;
  };
  if (!own.empty()) r.rows.push_back(make_row(own, own == "cudnn" ? alt_dtype : r.dtype, true));
  for (const char* alt : {"cudnn", "fused"})
    if (own != alt) r.rows.push_back(make_row(alt, alt_dtype, false));
  if (s.backward_calls > 0)
    for (ReplayRow& row : r.rows)
      if (!replay_has_backward(row.impl)) row.backward_why_not = fmt::format("the bench has no {} backward", row.impl);
  if (s.decode)  // reads a KV cache (decode, or packed forwards over it): what the bench's call moves
    for (ReplayRow& row : r.rows)
      row.bytes = attention_bytes(r.bench.shape, row.dtype == "fp16"   ? Precision::FP16
                                                 : row.dtype == "fp32" ? Precision::FP32
                                                                       : Precision::BF16);
  r.shape_text = replay_shape_text(r.bench.shape, r.dtype, mask, r.dropout);
  std::vector<std::string> parts;
  for (const bool backward : {false, true}) {
    if (backward && s.backward_calls == 0) continue;
    for (const std::string& d : {r.dtype, alt_dtype}) {
      const std::string c = bench_command(r, d, backward);
      if (!c.empty() && std::find(parts.begin(), parts.end(), c) == parts.end()) parts.push_back(c);
    }
  }
  for (const std::string& c : parts) r.command += (r.command.empty() ? "" : "\n") + c;
  return r;
}

}  // namespace

BenchShape bench_shape_of(const AttentionShape& traced) {
  BenchShape b{traced, 0, ""};
  if (!traced.shared_kv_pool()) return b;
  b.shape.kv_len = (traced.kv_len + traced.batch - 1) / traced.batch;
  b.shape.kv_batch = 0;
  b.page_size = static_cast<int>(std::clamp<std::int64_t>(traced.pool_block, 0, 1 << 20));
  b.note = fmt::format(
      "; one K/V pool of {} keys the {} sequences share (paged by the block mask{}): benched as {} sequences of {} "
      "keys each{}",
      traced.kv_len, traced.batch, b.page_size > 0 ? fmt::format(", {} tokens a page", b.page_size) : "", traced.batch,
      b.shape.kv_len,
      b.page_size > 0 ? ", paged for the rows that read a paged cache (fused), dense for the others" : "");
  return b;
}

ReplayCausality replay_causality(const TraceShape& s, std::optional<bool> asked) {
  ReplayCausality m;
  m.assumed = !s.causal_known && !asked && s.mask_in_call;
  m.causal = s.causal_known ? s.causal : asked.value_or(m.assumed);
  if (m.assumed && s.shape.q_len > 0 && s.shape.q_len < s.shape.kv_len) {  // a decoder's mask over its cache
    m.bottom_right = s.shape.q_len > 1;
    m.causal = m.bottom_right;
  }
  return m;
}

std::string replay_mask_guess(const AttentionShape& s) {
  if (s.q_len > 0 && s.q_len < s.kv_len)
    return s.q_len == 1 ? "; a mask is added to the scores inside the call, as a decoder's causal mask over its "
                          "cache is: its one query sees every key, replayed unmasked (--causal for top-left)"
                        : "; taken as causal with the queries last (bottom-right): a mask is added to the scores "
                          "inside the call, as a decoder's causal mask over its cache is (--no-causal to replay it as "
                          "not, --causal for top-left)";
  return "; taken as causal: a mask is added to the scores inside the call, as decoders' causal masks are "
         "(--no-causal to replay it as not)";
}

std::string replay_shape_text(const AttentionShape& s, std::string_view dtype, const ReplayCausality& mask,
                              double dropout) {
  return fmt::format("B={} H={} H_kv={} S={} S_kv={} D={} {}{}{}", s.batch, s.q_heads, s.kv_heads, s.q_len, s.kv_len,
                     s.head_dim, dtype,
                     !mask.causal        ? ""
                     : mask.bottom_right ? " causal (bottom-right)"
                                         : " causal",
                     dropout > 0 ? fmt::format(" dropout={:g}", dropout) : std::string());
}

std::string replay_bench_command(const AttentionShape& s, std::string_view dtype, const ReplayCausality& mask,
                                 double dropout, std::string_view impls, bool hot, bool backward, int page_size) {
  return fmt::format(
      "attnprof bench --timing {}{} --batch {} --heads {} --kv-heads {} --seq {} --kv-seq {} --head-dim {} --dtype "
      "{}{}{}{}{}",
      hot ? "hot" : "cold", backward ? " --pass backward" : "", s.batch, s.q_heads, s.kv_heads, s.q_len, s.kv_len,
      s.head_dim, dtype,
      !mask.causal        ? " --no-causal"
      : mask.bottom_right ? " --bottom-right"
                          : "",
      dropout > 0 ? fmt::format(" --dropout {:g}", dropout) : std::string(),
      page_size > 0 ? fmt::format(" --page-size {}", page_size) : std::string(),
      impls.empty() ? std::string() : fmt::format(" --impl {}", impls));
}

bool replay_has_backward(std::string_view impl) {
  return impl == "eager" || impl == "eager-fp32-softmax" || impl == "cudnn" || impl == "fused";
}

Replay plan_replay(const Analysis& analysis, const TraceIndex& index, const ReplayRequest& request) {
  Replay out;
  const GroupStats* group = main_group(analysis);
  if (group != nullptr) {
    out.region = group->group.name;
    out.steps = static_cast<int>(group->instances.size());
  }
  // The calls of that group's instances, as the report counts them (a call whose first kernel is in
  // one): not a call launched before the profiler's window (its shape is not in the trace), not
  // another group's (an eval loop beside training steps), so "per step" means one thing.
  const AttentionView& view = analysis.attention_calls;
  std::vector<char> in_regions(view.calls.size(), 0);
  if (group != nullptr)
    for (const RegionInstance& inst : group->group.instances)
      for (const std::size_t a : inst.activities)
        if (const std::int32_t c = view.call_of[a];
            c != kNone && view.calls[static_cast<std::size_t>(c)].activities.front() == a)
          in_regions[static_cast<std::size_t>(c)] = 1;
  TraceShapes found = trace_shapes(view, index, &in_regions);
  out.calls_without_shape = found.calls_without_shape + found.calls_batch_x_heads;
  out.backward_unpaired = found.backward_unpaired;
  for (const TraceShape& s : found.shapes) out.shapes.push_back(plan_shape(s, request, out.steps));
  if (found.unshaped.calls > 0) {
    TraceShape s = found.unshaped;
    if (request.shape) {
      const AttentionShape seen = s.shape;  // what the kernels said, if anything
      s.shape = *request.shape;
      if (request.shape->causal) {
        s.causal_known = true;
        s.causal = *request.shape->causal;
      }
      out.calls_without_shape = 0;
      ReplayShape r = plan_shape(s, request, out.steps);
      r.source = "--shape (the trace does not say it)";
      if (seen.from == ShapeFrom::Kernels) {
        const bool agrees = seen.batch * seen.q_heads * seen.q_len == s.shape.batch * s.shape.q_heads * s.shape.q_len &&
                            seen.kv_len == s.shape.kv_len && (seen.head_dim == 0 || seen.head_dim == s.shape.head_dim);
        r.source += agrees ? "; it agrees with the kernels' launches (" + seen.inferred + ")"
                           : "; it DISAGREES with the kernels' launches (" + seen.inferred + "): check it";
      }
      out.shapes.push_back(std::move(r));
    } else {
      ReplayShape r = plan_shape(s, request, out.steps);
      // Replays of a CUDA graph captured before the trace began: their ops ran at the capture.
      const bool graphs = s.graph_calls == s.calls;
      r.problem = fmt::format(
          "{} forward call{} without a shape in the trace{}: {}, or give it as --shape B,H[/H_KV],S[/S_KV],D", s.calls,
          text::plural(double(s.calls)), s.shape.from == ShapeFrom::Kernels ? " (" + s.shape.source() + ")" : "",
          !graphs ? "record it with torch.profiler.profile(record_shapes=True)"
          : found.graph_captures
              ? "replayed from CUDA graphs whose capture the trace holds but could not tell apart from another "
                "graph's, or that ran before it"
              : "replayed from a CUDA graph captured before the trace began (its ops, with their shapes, ran at "
                "the capture): start the profiler before the first compiled call, with record_shapes=True");
      r.shape_text = "shape not in the trace";
      r.command.clear();
      r.rows.clear();  // nothing to run
      out.shapes.push_back(std::move(r));
    }
  }
  std::stable_sort(out.shapes.begin(), out.shapes.end(),
                   [](const ReplayShape& a, const ReplayShape& b) { return a.traced.kernel_ns > b.traced.kernel_ns; });
  return out;
}

namespace {

// Whether the own replay agrees with the trace, in one line.
std::string agreement_line(const std::string& impl, const char* pass, double replayed, double traced) {
  const double off = replayed / traced - 1.0;
  return std::abs(off) <= kReplayAgreement
             ? fmt::format(
                   "the replay of {}{} is within {:.0f}% of the traced time ({:+.0f}%): the savings measured "
                   "here should carry over to the traced program",
                   impl, pass, kReplayAgreement * 100, off * 100)
             : fmt::format(
                   "the replay of {}{} took {:.3f} ms per call against {:.3f} ms in the trace ({:+.0f}%): "
                   "another GPU, other clocks, contention in the traced program or a different kernel "
                   "sequence; the savings are this GPU's, not necessarily the traced program's",
                   impl, pass, replayed, traced, off * 100);
}

}  // namespace

void finish_replay(Replay& replay) {
  replay.peak_tb_per_s = peak_memory_tb_per_s(replay.device);
  for (ReplayShape& s : replay.shapes) {
    for (ReplayRow& r : s.rows) {
      if (r.bytes <= 0 || !r.ms || *r.ms <= 0) continue;
      r.tb_per_s = r.bytes / (*r.ms * 1e-3) / 1e12;
      if (replay.peak_tb_per_s > 0) r.bandwidth_share = *r.tb_per_s / replay.peak_tb_per_s;
    }
    const ReplayRow* own = nullptr;
    const ReplayRow* own_backward = nullptr;
    for (const ReplayRow& r : s.rows) {
      if (r.own && r.ms) own = &r;
      if (r.own && r.backward_ms) own_backward = &r;
    }
    if (own && s.traced_ms > 0) {
      s.own_vs_traced = *own->ms / s.traced_ms;
      s.carries_over = agreement_line(own->impl, "", *own->ms, s.traced_ms);
    } else if (!s.rows.empty() && s.problem.empty() && replay.no_gpu.empty()) {
      s.carries_over = "no replay of the traced implementation: savings are against its traced time";
    }
    if (own_backward && s.traced_backward_ms > 0) {
      s.own_backward_vs_traced = *own_backward->backward_ms / s.traced_backward_ms;
      s.backward_carries_over =
          agreement_line(own_backward->impl, "'s backward", *own_backward->backward_ms, s.traced_backward_ms);
    }
    const double base = own ? *own->ms : s.traced_ms;
    const double backward_base = own_backward ? *own_backward->backward_ms : s.traced_backward_ms;
    for (ReplayRow& r : s.rows) {
      if (r.own) continue;
      if (r.ms) r.saving_ms = base - *r.ms;
      if (r.backward_ms && s.backward_calls > 0) r.backward_saving_ms = backward_base - *r.backward_ms;
      // A training shape's step saving needs both passes: a row without its backward says none.
      if (!r.saving_ms || s.calls_per_step <= 0 || (s.backward_calls > 0 && !r.backward_saving_ms)) continue;
      r.saving_step_ms = *r.saving_ms * s.calls_per_step;
      if (r.backward_saving_ms) *r.saving_step_ms += *r.backward_saving_ms * s.backward_calls_per_step;
    }
  }
}

}  // namespace attnprof
