// Stands in for cudnn_sdpa.cpp when the build found no cuDNN or no
// cudnn-frontend headers: the cudnn implementation says why it cannot run.
#include "attention/cuda/cuda_attention.h"
#include "common/input_error.h"

namespace attnprof::attention::cuda {

std::string cudnn_unavailable_reason() {
  return "built without cuDNN (libcudnn or the cudnn-frontend headers were missing at build time)";
}

void cudnn(const AttentionParams&, const ExecContext&) { throw InputError("cudnn: " + cudnn_unavailable_reason()); }
void cudnn_backward(const AttentionParams&, const AttentionGrads&, const ExecContext&) {
  throw InputError("cudnn: " + cudnn_unavailable_reason());
}

}  // namespace attnprof::attention::cuda
