// attnprof_fused_lab, the fused kernel's lab: checks every kernel path against
// the fp64 CPU reference on odd shapes, then times a path on a table of shapes
// and a sequence sweep (hot timing; `attnprof bench --impl fused:<path>` times
// one path on one shape the bench's way, cold).
//   attnprof_fused_lab --check            correctness suite, both paths
//   attnprof_fused_lab --time --csv F     timing table (bf16), CSV for scripts/lab/fused_peers.py; --cold:
//                                            the L2 overwritten before each call, one call a sample
//   attnprof_fused_lab --check --small    a few small shapes (for compute-sanitizer)
//   attnprof_fused_lab --count [--small]  how many cases the check list has (no GPU needed)
//   attnprof_fused_lab --timers           per-tile timers of the Hopper schedules: where a tile's time goes,
//                                            at S 512 and 16k, D 64 and 128; one_tile and persistent, or
//                                            those of the --path names
//   --case N                                 only the N-th case of the check list (0-based), so
//                                            sanitizer runs can go one case per process
//   --persistent-ctas N                      the persistent grids capped at N CTAs, so
//                                            small cases make each CTA walk several tiles
//   --split-tail N                           split_tail's ranges of at least N key blocks; below 4 every
//                                            tail whose ranges are shorter than an item splits (the small
//                                            cases split too)
//   --section-heads N                        dynamic's (batch, head)s per section of its longest-first
//                                            order (default: dynamic_section_heads)
//   --decode-splits N                        the decode kernel's splits of a unit's keys (its plan's choice
//                                            replaced), to sweep them with --time --shape
//   --decode-cp-async                        the decode kernel's K/V by 16-byte cp.async on an sm_90 GPU,
//                                            where it uses TMA otherwise
//   --shape B,H,HKV,S,SKV,D,CAUSAL[,bshd]    with --timers or --time: this shape (repeatable) instead of
//                                            the default set, e.g. the slowest of scripts/lab/fused_grid.py;
//                                            CAUSAL 0 none, 1 top-left, 2 bottom-right
//   --decode                                 the decode cases (short queries against long keys) instead of
//                                            the check list; with --small a few of them (splits, GQA, q_len 4)
//   --page-size N, --ragged                  with --check: the keys in a paged cache of N-token pages and/or
//                                            sequences of their own lengths (the decode kernel reads them)
//   --path p1,p2                             paths by name (schedule.h's kPathNames; the usage line lists
//                                            them); default: auto for timing, every available for checks
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime.h>

#include "attention/params.h"
#include "fused_attention.h"
#include "fused_harness.h"
#include "tile_timers.h"
#include "timed_launch.h"

using namespace attnprof::fused;

namespace {

using attnprof::attention::AttentionParams;
using attnprof::attention::DType;
using attnprof::attention::Layout;
using attnprof::attention::make_params;

struct TimedShape {
  int b, h, s, d;
  bool causal;
};

std::vector<TimedShape> timed_shapes() {
  std::vector<TimedShape> ts = {{4, 16, 2048, 64, true},   {4, 16, 2048, 64, false}, {2, 16, 4096, 128, true},
                                {2, 16, 4096, 128, false}, {8, 32, 1024, 128, true}, {1, 16, 8192, 128, true}};
  // Sweep: 16k tokens per batch, 2048 model width (FlashAttention's benchmark convention).
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int s : {512, 1024, 2048, 4096, 8192, 16384}) ts.push_back({16384 / s, 2048 / d, s, d, causal});
  return ts;
}

// The path names --path takes (kPathNames), joined by `sep`.
std::string path_names(const char* sep) {
  std::string out;
  for (const PathName& n : kPathNames) {
    if (!out.empty()) out += sep;
    out += n.name;
  }
  return out;
}

// "portable,hopper" -> paths; an unknown name is an error naming it.
bool parse_paths(const std::string& s, std::vector<Path>& out) {
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t end = std::min(s.find(',', pos), s.size());
    const std::string_view w = std::string_view(s).substr(pos, end - pos);
    const auto it = std::find_if(kPathNames.begin(), kPathNames.end(), [&](const PathName& n) { return n.name == w; });
    if (it == kPathNames.end()) {
      std::fprintf(stderr, "attnprof_fused_lab: --path: unknown path '%.*s' (have: %s)\n", static_cast<int>(w.size()),
                   w.data(), path_names(", ").c_str());
      return false;
    }
    out.push_back(it->path == Path::Automatic ? resolve_path(Path::Automatic) : it->path);
    pos = end + 1;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool do_check = false, do_time = false, do_timers = false, quick = false, small = false, do_count = false;
  bool decode = false, cold = false;
  KvForm form;
  std::string csv, path_arg;
  int only_case = -1;
  std::vector<AttentionParams> timer_shapes;
  LaunchOverrides overrides;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check"))
      do_check = true;
    else if (!std::strcmp(argv[i], "--time"))
      do_time = true;
    else if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--count"))
      do_count = true;
    else if (!std::strcmp(argv[i], "--small"))
      small = true;
    else if (!std::strcmp(argv[i], "--decode"))
      decode = true;
    else if (!std::strcmp(argv[i], "--cold"))
      cold = true;
    else if (!std::strcmp(argv[i], "--ragged"))
      form.ragged = true;
    else if (!std::strcmp(argv[i], "--page-size") && i + 1 < argc)
      form.page_size = std::max(0, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc)
      csv = argv[++i];
    else if (!std::strcmp(argv[i], "--path") && i + 1 < argc)
      path_arg = argv[++i];
    else if (!std::strcmp(argv[i], "--case") && i + 1 < argc)
      only_case = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--timers"))
      do_timers = true;
    else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) {
      int v[7] = {};
      char layout[8] = {};
      const int n =
          std::sscanf(argv[++i], "%d,%d,%d,%d,%d,%d,%d,%7s", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], layout);
      const bool bshd = n == 8 && !std::strcmp(layout, "bshd");
      if ((n != 7 && !bshd) || v[0] < 1 || v[1] < 1 || v[2] < 1 || v[1] % v[2] != 0 || v[3] < 1 || v[4] < 1 ||
          (v[5] != 64 && v[5] != 128) || v[6] < 0 || v[6] > 2) {
        std::fprintf(stderr,
                     "attnprof_fused_lab: --shape '%s': want B,H,HKV,S,SKV,D,CAUSAL[,bshd] (H a multiple of HKV, "
                     "D 64 or 128, CAUSAL 0 none, 1 top-left, 2 bottom-right)\n",
                     argv[i]);
        return 2;
      }
      AttentionParams shape =
          make_params(v[0], v[1], v[2], v[3], v[4], v[5], v[6] != 0, DType::BF16, bshd ? Layout::BSHD : Layout::BHSD);
      if (v[6] == 2) shape.causal_align = attnprof::attention::CausalAlign::BottomRight;
      timer_shapes.push_back(shape);
    } else if (!std::strcmp(argv[i], "--persistent-ctas") && i + 1 < argc)
      overrides.persistent_ctas = std::max(0, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--split-tail") && i + 1 < argc)
      overrides.split_tail_min_units = std::max(0, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--section-heads") && i + 1 < argc)
      overrides.section_heads = std::max(0, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--decode-splits") && i + 1 < argc)
      overrides.decode_splits = std::max(0, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--decode-cp-async"))
      overrides.decode_cp_async = true;
    else {
      std::fprintf(
          stderr,
          "usage: %s [--check] [--small] [--decode] [--page-size N] [--ragged] [--count] [--time] [--cold] [--timers] "
          "[--quick] [--csv FILE] [--case N] "
          "[--persistent-ctas N] [--split-tail N] [--section-heads N] [--decode-splits N] [--decode-cp-async] [--shape "
          "B,H,HKV,S,SKV,D,CAUSAL[,bshd]]... [--path %s]\n",
          argv[0], path_names(",").c_str());
      return 2;
    }
  }
  const auto case_list = [&] {
    if (decode) return small ? small_decode_cases() : decode_cases();
    return small ? small_cases() : check_cases();
  };
  if (do_count) {  // for scripts: the --case indices there are (scripts/lab/fused_device.sh sanitize)
    std::printf("%zu\n", case_list().size());
    return 0;
  }
  if (!do_check && !do_time && !do_timers) do_check = do_time = true;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // keep lines when a timeout kills the run
  if (!have_device()) {
    std::fprintf(stderr, "attnprof_fused_lab: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  const bool hopper = resolve_path(Path::Automatic) == Path::Hopper;
  std::vector<Path> paths;
  if (!path_arg.empty()) {
    if (!parse_paths(path_arg, paths)) return 2;
  } else {
    paths = hopper ? std::vector<Path>{Path::Portable, Path::OneTile,   Path::Persistent, Path::SplitTail,
                                       Path::Dynamic,  Path::KeepZeros, Path::Hopper}
                   : std::vector<Path>{Path::Portable};
  }

  int failures = 0;
  if (do_check) {
    unsigned seed = 1;
    const std::vector<AttentionParams> cases = case_list();
    if (only_case >= static_cast<int>(cases.size())) {
      std::fprintf(stderr, "attnprof_fused_lab: --case %d: the list has %zu cases\n", only_case, cases.size());
      return 2;
    }
    for (Path path : paths)
      for (std::size_t ci = 0; ci < cases.size(); ++ci) {
        if (only_case >= 0 && static_cast<int>(ci) != only_case) continue;
        const AttentionParams& c = cases[ci];
        const CaseCheck r = check_case(c, path, seed++, overrides, form);
        const bool ok = r.ok(1e-2);
        failures += !ok;
        std::printf("check %-10s %-60s rel_err %.2e lse_err %.2e unwritten %ld %s%s\n",
                    std::string(path_name(path)).c_str(), attnprof::attention::describe(c).c_str(), r.result.rel_error,
                    r.result.max_lse_err, r.result.unwritten, ok ? "ok" : "FAIL ", r.error.c_str());
      }
    std::printf("checks: %d failed\n", failures);
  }
  if (do_time) {
    std::FILE* f = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
    if (f) std::fprintf(f, "path,batch,heads,seq,head_dim,causal,ms,tflops\n");
    std::vector<Path> tpaths = path_arg.empty() ? std::vector<Path>{resolve_path(Path::Automatic)} : paths;
    std::vector<AttentionParams> shapes = timer_shapes;
    if (shapes.empty())
      for (const TimedShape& t : timed_shapes())
        shapes.push_back(make_params(t.b, t.h, t.h, t.s, t.s, t.d, t.causal, DType::BF16, Layout::BHSD));
    for (Path path : tpaths)
      for (const AttentionParams& c : shapes) {
        const TimeResult r = time_case(c, path, quick ? 3 : 10, quick ? 7 : 21, overrides, cold);
        if (!r.error.empty()) {
          std::printf("time %s %s: %s\n", std::string(path_name(path)).c_str(),
                      attnprof::attention::describe(c).c_str(), r.error.c_str());
          ++failures;
          continue;
        }
        std::printf("time %-10s %-60s %8.3f ms %7.1f TFLOP/s\n", std::string(path_name(path)).c_str(),
                    attnprof::attention::describe(c).c_str(), r.median_ms, r.tflops);
        if (f)
          std::fprintf(f, "%s,%d,%d,%d,%d,%d,%.5f,%.2f\n", std::string(path_name(path)).c_str(), c.batch, c.q_heads,
                       c.q_len, c.head_dim, c.causal ? 1 : 0, r.median_ms, r.tflops);
      }
    if (f) std::fclose(f);
  }
  if (do_timers) {
    if (!hopper) {
      std::fprintf(stderr, "attnprof_fused_lab: --timers needs an sm_90 GPU\n");
      return 1;
    }
    std::vector<Path> timed;
    for (Path p : path_arg.empty() ? std::vector<Path>{Path::OneTile, Path::Persistent} : paths)
      if (has_tile_timers(p)) timed.push_back(p);
    // By default the shapes where the fixed cost per tile shows most (S 512) and least (S 16k).
    if (timer_shapes.empty())
      for (int d : {64, 128})
        for (int s : {512, 16384})
          for (bool causal : {false, true})
            timer_shapes.push_back(
                make_params(16384 / s, 2048 / d, 2048 / d, s, s, d, causal, DType::BF16, Layout::BHSD));
    for (const AttentionParams& c : timer_shapes)
      for (Path path : timed) {
        const TileTimesResult r = time_tiles(c, 5, path, overrides);
        const std::string what = std::string(path_name(path)) + " " + attnprof::attention::describe(c);
        if (!r.error.empty()) {
          std::printf("timers %s: %s\n", what.c_str(), r.error.c_str());
          ++failures;
          continue;
        }
        std::printf("timers %s (SM clock %.2f GHz from the records)\n%s", what.c_str(), r.clock_ghz,
                    format_tile_times(r.times).c_str());
      }
  }
  return failures ? 1 : 0;
}
