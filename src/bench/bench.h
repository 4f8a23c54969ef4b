// `attnprof bench`: run the attention implementations on one shape, check each
// against fp64, time them properly and print one table plus the ladder of
// causes. CUDA-free interface; the GPU runner is linked in when CUDA is built.
#pragma once

#include <cstdio>
#include <string>

#include "bench/bench_options.h"
#include "bench/bench_result.h"
#include "bench/implementations.h"

namespace attnprof::bench {

// Throws attnprof::InputError (exit 2) for bad shapes, unknown implementations,
// a device that is not there, or an explicitly asked-for implementation that
// cannot run (unsupported dtype, out of memory).
BenchRun run_bench(const BenchOptions& options, const BenchProgress& progress = {});

// The table: print_table is the three parts at once; a caller that prints as
// the run goes calls print_header from BenchProgress::started, print_row from
// ::finished and print_footer at the end. GPU-only columns (share of the GEMM
// rate, kernels, GEMM unit) are left out of a CPU run's table.
void print_table(const BenchRun& run, std::FILE* out);
void print_header(const BenchRun& run, std::FILE* out);
void print_row(const BenchRun& run, const ImplResult& row, std::FILE* out);
void print_footer(const BenchRun& run, std::FILE* out);
std::string to_json(const BenchRun& run);

// --- used by the device runners -------------------------------------------
struct Plan {
  attention::AttentionParams shape;
  std::vector<Implementation> impls;
  std::vector<bool> explicitly_asked;  // per impl: named in --impl
  int check_slices = 0;                // 0: no check; else how many (batch, head) slices
  int repeats = 0;
  std::string trace_dir;
  unsigned seed = 0;
  bool hot = false;                         // GPU timing mode (BenchOptions::hot)
  bool interleave = false;                  // GPU: samples in rounds over the implementations
  int page_size = 0;                        // BenchOptions::page_size
  Pass pass = Pass::Forward;                // what one timed call is; check_slices counts kv-head groups if not forward
  const BenchProgress* progress = nullptr;  // never null inside the runners
};
// "warning: this shape takes about N minutes on this CPU ..." when a CPU run of
// `impls` implementations would take over a minute, else "".
std::string cpu_time_warning(const attention::AttentionParams& shape, std::size_t impls);

// A row for `impl` as the runners start it: its name and ladder step, no numbers.
ImplResult start_row(const Implementation& impl);
void run_on_cpu(const Plan& plan, BenchRun& run);
void run_on_cuda(const Plan& plan, BenchRun& run);  // throws InputError without CUDA

}  // namespace attnprof::bench
