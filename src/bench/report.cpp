// The bench table, the ladder of causes, and the same as JSON.
#include <cmath>
#include <string>

#include <fmt/core.h>

#include "bench/bench.h"
#include "common/json.h"

namespace attnprof::bench {

namespace {

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  return fmt::format("{:.0f} KB", b / 1e3);
}

const ImplResult* find(const BenchRun& run, const std::string& name) {
  for (const auto& r : run.rows)
    if (r.name == name && r.skipped.empty()) return &r;
  return nullptr;
}

// Each row names the implementation one cause away (the registry's ladder
// step); the ladder prints the steps whose both ends ran, in row order.
template <typename F>
void for_each_step(const BenchRun& run, F&& f) {
  const ImplResult* math = find(run, "math");
  const double base = math ? math->median_ms : 0.0;
  for (const ImplResult& b : run.rows) {
    if (b.ladder_from.empty() || !b.skipped.empty()) continue;
    if (const ImplResult* a = find(run, b.ladder_from)) f(b.ladder_cause, *a, b, base);
  }
}

// Six significant digits, as the bench's JSON always had them.
std::string json_number(double v) { return fmt::format("{:.6g}", v); }

// `text` on lines of at most 100 columns, broken at spaces (a word longer than that stays whole).
void print_wrapped(std::FILE* out, std::string_view text) {
  constexpr std::size_t kWidth = 100;
  while (text.size() > kWidth) {
    std::size_t cut = text.rfind(' ', kWidth);
    if (cut == std::string_view::npos || cut == 0) cut = text.find(' ', kWidth);
    if (cut == std::string_view::npos) break;
    fmt::print(out, "{}\n", text.substr(0, cut));
    text.remove_prefix(cut + 1);
  }
  fmt::print(out, "{}\n", text);
}

// The GEMM unit column's short form ("tensor-core bf16" as "TC bf16"); the footer says what TC and CUDA are.
std::string short_unit(std::string unit) {
  for (const auto& [long_name, short_name] :
       {std::pair{"tensor-core", "TC"}, std::pair{"cuda-core", "CUDA"}, std::pair{"fused attention", "fused"}})
    for (auto at = unit.find(long_name); at != std::string::npos; at = unit.find(long_name))
      unit.replace(at, std::string_view(long_name).size(), short_name);
  return unit;
}

// Two timings this run cannot tell apart: their p10-p90 ranges overlap.
bool within_noise(const ImplResult& a, const ImplResult& b) { return a.p10_ms <= b.p90_ms && b.p10_ms <= a.p90_ms; }

}  // namespace

void print_header(const BenchRun& run, std::FILE* out) {
  fmt::print(out, "attnprof bench: {}{} on {}\n", attention::describe(run.shape),
             run.pass == Pass::Forward ? ""
             : run.pass == Pass::Both  ? ", forward + backward"
                                       : ", backward",
             run.device);
  if (!run.note.empty()) print_wrapped(out, "note: " + run.note);
  if (run.gemm_tflops)
    fmt::print(out, "bf16 GEMM rate in this run: {:.0f} TFLOP/s ({})\n", *run.gemm_tflops, run.gemm_rate_shape);
  if (run.on_gpu)
    fmt::print(out, "{:<18} {:>9} {:>13} {:>7} {:>5} {:>7} {:<12} {:>9} {}\n", "impl", "median ms", "p10-p90 ms",
               "TFLOP/s", "%GEMM", "kernels", "GEMM unit", "bytes", "rel err");
  else
    fmt::print(out, "{:<18} {:>9} {:>13} {:>7} {:>9} {}\n", "impl", "median ms", "p10-p90 ms", "TFLOP/s", "bytes",
               "rel err");
  std::fflush(out);
}

void print_row(const BenchRun& run, const ImplResult& r, std::FILE* out) {
  if (!r.skipped.empty()) {
    fmt::print(out, "{:<18} skipped: {}\n", r.name, r.skipped);
    std::fflush(out);
    return;
  }
  std::string err = "unchecked";
  if (r.rel_error) {
    err = std::isfinite(*r.rel_error) ? fmt::format("{:.2e}", *r.rel_error) : "NaN/unwritten";
    if (!r.check_passed) err += " FAIL";
  }
  // Milliseconds to the microsecond, and to a tenth of one under 0.1 ms (decode calls of 5-50 us).
  const auto ms = [](double v) { return v < 0.1 ? fmt::format("{:.4f}", v) : fmt::format("{:.3f}", v); };
  const std::string spread = ms(r.p10_ms) + "-" + ms(r.p90_ms);
  const std::string tflops = r.tflops >= 10 ? fmt::format("{:.1f}", r.tflops) : fmt::format("{:.3g}", r.tflops);
  if (run.on_gpu)
    fmt::print(out, "{:<18} {:>9} {:>13} {:>7} {:>5} {:>7} {:<12} {:>9} {}\n", r.name, ms(r.median_ms), spread, tflops,
               r.pct_of_gemm ? fmt::format("{:.1f}", *r.pct_of_gemm) : "n/a",
               r.kernels ? fmt::format("{}", *r.kernels) : "n/a", short_unit(r.gemm_unit), bytes_text(r.bytes_model),
               err);
  else
    fmt::print(out, "{:<18} {:>9} {:>13} {:>7} {:>9} {}\n", r.name, ms(r.median_ms), spread, tflops,
               bytes_text(r.bytes_model), err);
  std::fflush(out);
}

void print_table(const BenchRun& run, std::FILE* out) {
  print_header(run, out);
  for (const ImplResult& r : run.rows) print_row(run, r, out);
  print_footer(run, out);
}

void print_footer(const BenchRun& run, std::FILE* out) {
  const ImplResult* checked = nullptr;
  for (const ImplResult& r : run.rows)
    if (r.skipped.empty() && checked == nullptr) checked = &r;
  print_wrapped(
      out,
      fmt::format("TFLOP/s counts {}{}; bytes: each pass reads its inputs and writes its "
                  "outputs once (a model, of the forward); rel err: {} vs fp64 on {} of {} {}{}",
                  attention::attention_flops_rule(run.shape),
                  run.pass == Pass::Forward ? ""
                  : run.pass == Pass::Both  ? ", x3.5 for forward + backward"
                                            : ", x2.5 for the backward",
                  run.pass == Pass::Forward ? "||out-ref||/||ref||" : "the worst ||grad-ref||/||ref|| of dQ, dK, dV",
                  checked ? checked->slices_checked : 0, checked ? checked->slices_total : 0,
                  run.pass == Pass::Forward ? "heads" : "(batch, kv head) groups",
                  run.on_gpu ? fmt::format("; kernels: {}; TC: tensor cores, CUDA: FP32 FFMA on CUDA cores; "
                                           "timing: {}",
                                           run.kernel_count_source.empty() ? "n/a" : run.kernel_count_source,
                                           std::string(run.timing == "hot" ? "hot (10 back-to-back calls a sample, "
                                                                             "nothing flushed, as inside a program)"
                                                                           : "cold (L2 flushed before each call)") +
                                               (run.interleaved ? ", interleaved (one sample of each "
                                                                  "implementation per round)"
                                                                : ""))
                             : std::string()));
  bool header = false, noisy = false;
  for_each_step(run, [&](const std::string& cause, const ImplResult& a, const ImplResult& b, double base) {
    if (!header) {
      fmt::print(out, "\nladder (each step removes one cause):\n{:<36} {:<38} {:>9} {:>6}\n", "cause removed",
                 "from -> to", "saved ms", "% math");
      header = true;
    }
    const double saved = a.median_ms - b.median_ms;
    const bool noise = within_noise(a, b);
    noisy |= noise;
    fmt::print(out, "{:<36} {:<38} {:>9.3f} {:>6}{}\n", cause, fmt::format("{} -> {}", a.name, b.name), saved,
               base > 0 ? fmt::format("{:.1f}", 100.0 * saved / base) : "n/a", noise ? " *" : "");
  });
  if (noisy) fmt::print(out, "* within noise: the two p10-p90 ranges overlap, so this run cannot tell them apart\n");
  for (const ImplResult& r : run.rows)
    if (r.rel_error && !r.check_passed)
      fmt::print(out, "CHECK FAILED: {} differs from fp64 by {:.2e}\n", r.name, *r.rel_error);
}

std::string to_json(const BenchRun& run) {
  const auto& p = run.shape;
  std::string out;
  JsonWriter j(out);
  // A number, or null where it is not finite (NaN from an unwritten output).
  const auto number = [&](std::string_view key, double v) {
    if (std::isfinite(v))
      j.num(key, json_number(v));
    else
      j.null(key);
  };
  j.begin_object();
  j.str("device", run.device);
  j.boolean("on_gpu", run.on_gpu);
  j.begin_object("shape");
  j.num("batch", p.batch);
  j.num("heads", p.q_heads);
  j.num("kv_heads", p.kv_heads);
  j.num("seq", p.q_len);
  j.num("kv_seq", p.kv_len);
  j.num("head_dim", p.head_dim);
  j.str("dtype", attention::dtype_name(p.dtype));
  j.str("layout", attention::layout_name(p.layout));
  j.boolean("causal", p.causal);
  j.boolean("bottom_right", p.causal_align == attention::CausalAlign::BottomRight);
  number("scale", p.scale);
  j.end_object();
  j.str("pass", pass_name(run.pass));
  number("flops", pass_flops(p, run.pass));
  j.str("note", run.note);
  j.num("seed", run.seed);
  if (run.gemm_tflops)
    number("gemm_tflops", *run.gemm_tflops);
  else
    j.null("gemm_tflops");
  j.str("kernel_count_source", run.kernel_count_source);
  j.str("timing", run.timing);
  j.boolean("interleaved", run.interleaved);
  j.num("page_size", run.page_size);
  j.begin_array("paged_rows");
  for (const std::string& name : run.paged_rows) j.str({}, name);
  j.end_array();
  j.begin_array("impls");
  for (const ImplResult& r : run.rows) {
    j.begin_object();
    j.str("name", r.name);
    if (!r.skipped.empty()) {
      j.str("skipped", r.skipped);
      j.end_object();
      continue;
    }
    number("median_ms", r.median_ms);
    number("p10_ms", r.p10_ms);
    number("p90_ms", r.p90_ms);
    j.num("runs", r.runs);
    number("tflops", r.tflops);
    if (r.pct_of_gemm)
      number("pct_of_gemm", *r.pct_of_gemm);
    else
      j.null("pct_of_gemm");
    if (r.kernels)
      j.num("kernels", *r.kernels);
    else
      j.null("kernels");
    j.str("gemm_unit", r.gemm_unit);
    number("bytes_model", r.bytes_model);
    if (r.rel_error)
      number("rel_error", *r.rel_error);
    else
      j.null("rel_error");
    j.num("slices_checked", r.slices_checked);
    j.num("slices_total", r.slices_total);
    j.boolean("check_passed", r.check_passed);
    j.begin_array("kernel_names");
    for (const auto& name : r.kernel_names) j.str({}, name);
    j.end_array();
    j.begin_array("kernel_us");
    for (const double us : r.kernel_us) number({}, us);
    j.end_array();
    if (r.kernel_ms)
      number("kernel_ms", *r.kernel_ms);
    else
      j.null("kernel_ms");
    j.end_object();
  }
  j.end_array();
  j.begin_array("ladder");
  for_each_step(run, [&](const std::string& cause, const ImplResult& a, const ImplResult& b, double base) {
    j.begin_object();
    j.str("from", a.name);
    j.str("to", b.name);
    j.str("cause", cause);
    number("saved_ms", a.median_ms - b.median_ms);
    if (base > 0)
      number("pct_of_math", 100.0 * (a.median_ms - b.median_ms) / base);
    else
      j.null("pct_of_math");
    j.boolean("within_noise", within_noise(a, b));
    j.end_object();
  });
  j.end_array();
  j.end_object();
  out += '\n';
  return out;
}

}  // namespace attnprof::bench
