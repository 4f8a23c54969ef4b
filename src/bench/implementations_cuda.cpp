// The CUDA registry (built only with a CUDA toolkit, into the bench plugin):
// the SDPA-math reproduction, each cause removed one step at a time, the
// hand-written sequence, cuDNN and the project's fused kernel.
#include <cuda_runtime.h>

#include <string>
#include <string_view>

#include "attention/cuda/cuda_attention.h"
#include "attention/fused/attention_fn.h"
#include "bench/bytes_model.h"
#include "bench/cuda_backend.h"
#include "bench/implementations.h"

namespace attnprof::bench {
namespace {

template <fused::Path P>
Implementation path_row(std::string_view what) {
  Implementation row{std::string("fused:") + std::string(fused::path_name(P)),
                     true,
                     fused::attention_forward_path<P>,
                     fused::attention_workspace,
                     "",
                     "fused on one path: " + std::string(what),
                     bytes::fused,
                     "",
                     ""};
  row.takes_fp32 = false;
  row.takes_every_shape = false;
  row.on_request = true;
  row.takes_paged_kv = true;  // a paged call runs on the decode kernel whatever the path
  return row;
}

}  // namespace

std::vector<Implementation> plugin::implementations() {
  namespace cu = attention::cuda;
  const std::string cudnn_reason = cu::cudnn_unavailable_reason();
  std::vector<Implementation> rows = {
      {"math", true, cu::math, cu::math_workspace, "",
       "PyTorch SDPA math, kernel for kernel: fp32 upcast, FP32 GEMMs, mask rebuilt, safe softmax", bytes::math, "",
       ""},
      {"math-no-upcast", true, cu::math_no_upcast, cu::math_no_upcast_workspace, "",
       "math in the input dtype: GEMMs on tensor cores", bytes::math_no_upcast, "math",
       "fp32 upcast (FFMA GEMMs, 5 casts)"},
      {"math-cached-mask", true, cu::math_cached_mask, cu::math_no_upcast_workspace, "",
       "and the causal mask built once", bytes::math_cached_mask, "math-no-upcast",
       "mask rebuilt every call (5 kernels)"},
      {"math-plain-softmax", true, cu::math_plain_softmax, cu::math_no_upcast_workspace, "",
       "and a plain softmax instead of _safe_softmax", bytes::math_plain_softmax, "math-cached-mask",
       "_safe_softmax's eq/all/where passes"},
      {"manual", true, cu::manual, cu::manual_workspace, "",
       "hand-written: bf16 QK^T, scale, in-place mask fill, softmax, PV", bytes::manual, "math-plain-softmax",
       "scale q,k + add mask vs masked_fill_"},
      // Hugging Face's eager attention: the stand-in for a traced model's unfused call (doctor --replay).
      {"eager", true, cu::eager, cu::eager_workspace, "",
       "Hugging Face eager: QK^T, * scaling, + additive mask, softmax, PV (GPT-2, BERT)", bytes::eager, "", "", true,
       true, true},
      {"eager-fp32-softmax", true, cu::eager_fp32_softmax, cu::eager_fp32_softmax_workspace, "",
       "Hugging Face eager with softmax(dtype=float32): fp32 weights, cast back (Llama, Mistral, Qwen2)",
       bytes::eager_fp32_softmax, "", "", true, true, true},
      {"cudnn", true, cu::cudnn, nullptr, cudnn_reason, "cuDNN fused SDPA (graph API)", bytes::fused, "manual",
       "unfused: scores through memory", false, true},
      {"fused", true, fused::attention_forward, fused::attention_workspace, "",
       "the project's own fused kernel: one launch, tensor cores, online softmax", bytes::fused, "manual",
       "unfused: scores via memory (ours)", false, false, false, false, true},
      // The fused kernel on one code path, as the lab runs it: only when named.
      path_row<fused::Path::Portable>(fused::kPathNames[1].what),
      path_row<fused::Path::Hopper>(fused::kPathNames[2].what),
      path_row<fused::Path::OneTile>(fused::kPathNames[3].what),
      path_row<fused::Path::Persistent>(fused::kPathNames[4].what),
      path_row<fused::Path::SplitTail>(fused::kPathNames[5].what),
      path_row<fused::Path::Dynamic>(fused::kPathNames[6].what),
      path_row<fused::Path::KeepZeros>(fused::kPathNames[7].what),
      path_row<fused::Path::Decode>(fused::kPathNames[8].what),
  };
  // Attention dropout (training) where PyTorch's counterpart has it: the math path, the eager
  // stand-ins and cuDNN; the hand-written path of the study and the fused kernel have none.
  for (Implementation& r : rows) {
    r.takes_dropout = r.name.starts_with("math") || r.name.starts_with("eager") || r.name == "cudnn";
    // The backward (--pass, doctor --replay of training): the eager stand-ins through autograd's
    // kernels, cuDNN's fused backward and the project's (fused: bwd_sm90.cu on sm_90, else bwd_sm80.cu;
    // fused:portable and fused:hopper: that kernel).
    if (r.name == "eager") {
      r.backward = cu::eager_backward;
      r.backward_workspace = cu::eager_backward_workspace;
    } else if (r.name == "eager-fp32-softmax") {
      r.backward = cu::eager_fp32_softmax_backward;
      r.backward_workspace = cu::eager_fp32_softmax_backward_workspace;
    } else if (r.name == "cudnn") {
      r.backward = cu::cudnn_backward;
      r.backward_takes_every_shape = false;  // cuDNN refuses some (bottom-right with q longer than kv)
      // --page-size: cuDNN's paged attention reads the same paged cache as the fused kernel (9.15 and later).
      r.takes_paged_kv = cudnn_reason.empty() && cu::cudnn_reads_paged_kv();
    } else if (r.name == "fused") {
      r.backward = fused::attention_backward;
      r.backward_workspace = fused::attention_backward_workspace;
      r.backward_takes_every_shape = false;  // dense K/V only, as the forward: bf16/fp16, D 64/128
    } else if (r.name == "fused:portable" || r.name == "fused:hopper") {
      // The backward's main kernel named as the forward's path: bwd_sm80.cu's, or bwd_sm90.cu's (sm_90 only).
      r.backward = r.name == "fused:hopper" ? fused::attention_backward_path<fused::BackwardPath::Hopper>
                                            : fused::attention_backward_path<fused::BackwardPath::Portable>;
      r.backward_workspace = fused::attention_backward_workspace;
      r.backward_takes_every_shape = false;
    }
  }
  return rows;
}

std::string plugin::device_name(std::string* why) {
  if (!attention::cuda::device_available(why)) return {};
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    if (why) *why = "cannot read the CUDA device's properties";
    return {};
  }
  return prop.name;
}

}  // namespace attnprof::bench
