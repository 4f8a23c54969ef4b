// Without a CUDA build there is no GPU runner.
#include "bench/bench.h"
#include "trace/trace_error.h"

namespace attnprof::bench {

void run_on_cuda(const Plan&, BenchRun&) { throw InputError("--device cuda: attnprof was built without CUDA"); }

}  // namespace attnprof::bench
