// The CUDA implementations, each an AttentionFn plus the scratch it needs. A
// CUDA-free header: the bench and tests call these without CUDA types
// (ExecContext::stream is a cudaStream_t, workspace device memory).
//
// The ladder from PyTorch's math path to the hand-written one, each step
// removing one cause (kernels per forward, bf16 causal, default BHSD shapes):
//   math                20  upcast to fp32, FP32 GEMMs on CUDA cores, mask rebuilt, safe softmax
//   math-no-upcast      15  same sequence in the input dtype: GEMMs on tensor cores
//   math-cached-mask    10  and the additive mask built once, not every call
//   math-plain-softmax   6  and a plain softmax instead of _safe_softmax's extra passes
//   manual               5  scores scaled once instead of q and k separately, mask fill in place
//   cudnn                1  cuDNN's fused SDPA (graph API)
//   fused                -  the project's own kernel (src/attention/fused), when built
#pragma once

#include <cstddef>
#include <string>

#include "attention/params.h"

namespace attnprof::attention::cuda {

void math(const AttentionParams& p, const ExecContext& ctx);
void math_no_upcast(const AttentionParams& p, const ExecContext& ctx);
void math_cached_mask(const AttentionParams& p, const ExecContext& ctx);
void math_plain_softmax(const AttentionParams& p, const ExecContext& ctx);
std::size_t math_workspace(const AttentionParams& p);
std::size_t math_no_upcast_workspace(const AttentionParams& p);

void manual(const AttentionParams& p, const ExecContext& ctx);
std::size_t manual_workspace(const AttentionParams& p);

// Hugging Face transformers' eager attention (eager.cu): the stand-in for an
// unfused call of a traced model. eager_fp32_softmax: softmax(dtype=float32).
void eager(const AttentionParams& p, const ExecContext& ctx);
void eager_fp32_softmax(const AttentionParams& p, const ExecContext& ctx);
std::size_t eager_workspace(const AttentionParams& p);
std::size_t eager_fp32_softmax_workspace(const AttentionParams& p);
// Their backward, autograd's kernels through the same ops (BackwardFn: the workspace begins
// with the forward's, as the forward left it).
void eager_backward(const AttentionParams& p, const AttentionGrads& g, const ExecContext& ctx);
void eager_fp32_softmax_backward(const AttentionParams& p, const AttentionGrads& g, const ExecContext& ctx);
std::size_t eager_backward_workspace(const AttentionParams& p);
std::size_t eager_fp32_softmax_backward_workspace(const AttentionParams& p);

// cuDNN's fused SDPA; bf16/fp16 only. Graphs are built once per shape and cached.
void cudnn(const AttentionParams& p, const ExecContext& ctx);
// cuDNN's SDPA backward (the frontend's sdpa_backward), from the outputs and the lse (softmax
// stats) of cudnn() on the same params: params.out and params.lse as that forward wrote them.
void cudnn_backward(const AttentionParams& p, const AttentionGrads& g, const ExecContext& ctx);
// Empty when cuDNN can run here, else why not (one line).
std::string cudnn_unavailable_reason();
// Whether the loaded cuDNN reads a paged cache (params' block_table) in cudnn()'s forward: 9.15 and later.
bool cudnn_reads_paged_kv();

// True when a CUDA device is present and usable; else `why` says what is missing.
bool device_available(std::string* why = nullptr);

}  // namespace attnprof::attention::cuda
