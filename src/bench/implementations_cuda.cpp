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
       "unfused: scores via memory (ours)", false, false},
      // The fused kernel on one code path, as the lab runs it: only when named.
      path_row<fused::Path::Portable>("mma.sync, sm_80+"),
      path_row<fused::Path::Hopper>(
          "TMA + wgmma, warp-specialized, ping-pong, TMA store; v6, v8, v11, v13, v18, v26 or v27, sm_90a"),
      path_row<fused::Path::HopperOverlap>("hopper with S(n) overlapping PV(n-1) in a warpgroup"),
      path_row<fused::Path::HopperM192>("hopper with 3 consumer warpgroups (BM=192, D=64)"),
      path_row<fused::Path::HopperV2>("hopper version 2: S, softmax, P V in turn in each warpgroup"),
      path_row<fused::Path::HopperV5>("hopper_overlap with the warpgroups taking turns, output from registers"),
      path_row<fused::Path::HopperV6>("hopper_v5 with the output through shared memory and TMA, a CTA per tile"),
      path_row<fused::Path::HopperV7>("hopper_v6 as a persistent grid (a CTA per SM)"),
      path_row<fused::Path::HopperV8>("hopper_v7 with two Q buffers (the next Q loaded earlier)"),
      path_row<fused::Path::HopperV9>("hopper_v6 with 176-key blocks at D=128"),
      path_row<fused::Path::HopperV10>("hopper_v7 with 176-key blocks at D=128, one 64-row output staging"),
      path_row<fused::Path::HopperV11>("hopper_v8 with 160-key blocks at D=128 (output staged in Q), 3 stages at D=64"),
      path_row<fused::Path::HopperV13>("hopper_v8 or v11 with the last round split along the keys (full attention)"),
      path_row<fused::Path::HopperV18>(
          "hopper_v8 (v11 at D=64) with the causal diagonal's masked half skipped, each warpgroup's in turn"),
      path_row<fused::Path::HopperV26>(
          "hopper_v18 (v11 at D=64) with keyless tiles' zeros kept in the staging rows (bottom-right causal)"),
      path_row<fused::Path::HopperV27>("hopper_v6 without the warpgroups whose rows all lie past the sequence's end"),
      path_row<fused::Path::HopperV29>(
          "hopper_v18 (v11 at D=64) with a dynamic causal tile scheduler: single tiles, longest first, atomic counter"),
  };
  // Attention dropout (training) where PyTorch's counterpart has it: the math path, the eager
  // stand-ins and cuDNN; the hand-written path of the study and the fused kernel have none.
  for (Implementation& r : rows)
    r.takes_dropout = r.name.starts_with("math") || r.name.starts_with("eager") || r.name == "cudnn";
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
