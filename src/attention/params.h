// The one thing that crosses from the host into every attention implementation,
// CPU or CUDA: pointers, sizes, strides, masking and scale (after flash-attention's
// Flash_fwd_params). Plain data, no CUDA types, so the CPU core and the CUDA edges
// share it. Every implementation has the same signature, AttentionFn.
//
// Semantics (all implementations agree with the fp64 reference on these):
//   out[b,h,i,:] = sum_j softmax_j(scale * q[b,h,i,:] . k[b,h/g,j,:] + mask[i,j]) v[b,h/g,j,:]
//   with g = q_heads / kv_heads (GQA/MQA: query head h reads kv head h / g).
//   causal, top-left (PyTorch is_causal=True): query i sees keys j <= i.
//   causal, bottom-right (explicit flag): query i sees keys j <= i + kv_len - q_len.
//   A row that sees no key gives zeros (like PyTorch's _safe_softmax), and lse = -inf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnprof::attention {

// Element type of q, k, v and out (lse is always fp32). Math inside is fp32 or wider.
enum class DType : std::uint8_t { BF16, FP16, FP32 };

// Where the sequence and head axes sit in memory: BHSD is [batch][head][seq][dim],
// BSHD is [batch][seq][head][dim] (the layout PyTorch gets from a linear projection).
enum class Layout : std::uint8_t { BHSD, BSHD };

// Which corner the causal diagonal starts at when q_len != kv_len.
enum class CausalAlign : std::uint8_t { TopLeft, BottomRight };

// Strides in elements (not bytes) of one 4-D tensor; the last dim is contiguous.
struct TensorStrides {
  std::int64_t batch = 0;  // between batches
  std::int64_t head = 0;   // between heads
  std::int64_t row = 0;    // between sequence positions
};

struct AttentionParams {
  const void* q = nullptr;  // [batch, q_heads, q_len, head_dim] by q_strides
  const void* k = nullptr;  // [batch, kv_heads, kv_len, head_dim] by k_strides
  const void* v = nullptr;  // [batch, kv_heads, kv_len, head_dim] by v_strides
  void* out = nullptr;      // [batch, q_heads, q_len, head_dim] by out_strides
  float* lse = nullptr;     // optional [batch, q_heads, q_len] contiguous; natural log

  int batch = 0;
  int q_heads = 0;
  int kv_heads = 0;  // divides q_heads; 1 is MQA, q_heads is plain multi-head
  int q_len = 0;
  int kv_len = 0;
  int head_dim = 0;

  bool causal = false;
  CausalAlign causal_align = CausalAlign::TopLeft;
  float scale = 0.0f;  // softmax scale; make_params sets 1/sqrt(head_dim)
  // Attention dropout (training): the probability of zeroing a weight, the rest scaled by 1/(1-p), as
  // F.scaled_dot_product_attention(dropout_p=). 0: none. Only implementations whose registry row
  // says takes_dropout apply it; the bench does not ask the others.
  float dropout = 0.0f;
  DType dtype = DType::BF16;
  Layout layout = Layout::BHSD;  // what the strides below were made from

  TensorStrides q_strides, k_strides, v_strides, out_strides;

  // Paged KV, as serving engines lay out their cache (vLLM, FlashInfer): k and v are pools of pages of
  // page_size tokens, k_strides.batch the stride between pages, .row between the tokens of a page, .head
  // between heads; key j of sequence b is token j % page_size of page block_table[b * block_table_stride +
  // j / page_size]. Device int32. Null: k and v are [batch, kv_heads, kv_len, head_dim] by their strides.
  const int* block_table = nullptr;
  int block_table_stride = 0;  // pages per sequence in block_table (page_size x it >= kv_len)
  int page_size = 0;
  int kv_pages = 0;  // pages in each of the pools k and v (what cuDNN's paged graph is told; 0: not said)
  // Keys of each sequence, device int32 [batch], each in [0, kv_len]: a batch of sequences of different
  // lengths (kv_len is the longest); bottom-right causal then aligns each sequence's own end. Null: kv_len.
  const int* seq_lens = nullptr;
};

// Where an implementation runs and the scratch memory it may use. stream is a
// cudaStream_t for CUDA implementations and ignored on the CPU; workspace is
// device memory (CUDA) or host memory (CPU) of at least the bytes the
// implementation's WorkspaceFn asked for.
struct ExecContext {
  void* stream = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// The signature of every implementation: cpu::reference, cpu::manual, cuda::math, ...
// Throws attnprof::InputError for shapes or dtypes it does not support and
// std::runtime_error for a failed library or CUDA call.
using AttentionFn = void (*)(const AttentionParams& params, const ExecContext& ctx);
// Scratch bytes an implementation needs for these params (0 if none).
using WorkspaceFn = std::size_t (*)(const AttentionParams& params);

// The backward of one call (training): given dO, the gradients of q, k and v. The forward's
// tensors are AttentionParams' (q, k, v, and out and lse as the implementation's forward left
// them); dq is strided like q, dk like k, dv like v and d_out like out, all in params.dtype. With
// GQA, dk and dv are per kv head: the gradients of the query heads that share one are summed.
struct AttentionGrads {
  const void* d_out = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
};

// The signature of every backward. `ctx.workspace` holds at least the implementation's
// backward WorkspaceFn bytes, and its first WorkspaceFn bytes are the forward's scratch as the
// forward of the same params left it (what autograd saves: the attention weights, a dropout mask).
using BackwardFn = void (*)(const AttentionParams& params, const AttentionGrads& grads, const ExecContext& ctx);

// Dense strides for a tensor of [batch, heads, seq, dim] stored in `layout`.
TensorStrides dense_strides(Layout layout, int heads, int seq, int dim);

// Params with dense strides for all four tensors and scale = 1/sqrt(head_dim).
// Pointers are left null for the caller to fill.
AttentionParams make_params(int batch, int q_heads, int kv_heads, int q_len, int kv_len, int head_dim, bool causal,
                            DType dtype, Layout layout = Layout::BHSD);

// Throws attnprof::InputError naming the first bad field ("kv heads 3 does not
// divide q heads 16"). Pointers are not checked. kv_len may be 0: every row
// then sees no key (zeros, lse = -inf).
void validate(const AttentionParams& params);

// "B=8 H=16 H_kv=16 S=1024 S_kv=1024 D=64 bf16 bhsd causal" (and a scale that
// is not 1/sqrt(D)): how reports and the lab name a call.
std::string describe(const AttentionParams& params);

// Last key index (inclusive) query row i may see, or kv_len - 1 when not causal.
// -1 means the row sees nothing.
inline int last_visible_key(const AttentionParams& p, int i) {
  if (!p.causal) return p.kv_len - 1;
  const int shift = p.causal_align == CausalAlign::BottomRight ? p.kv_len - p.q_len : 0;
  const int last = i + shift;
  if (last < -1) return -1;
  return last < p.kv_len - 1 ? last : p.kv_len - 1;
}

std::size_t dtype_bytes(DType dtype);
const char* dtype_name(DType dtype);
// "bf16"/"fp16"/"fp32" (also "bfloat16", "half", "float16", "float32", "float");
// throws InputError otherwise.
DType parse_dtype(const std::string& name);
const char* layout_name(Layout layout);

// Forward FLOPs: 4*B*H*D per (query, key) pair computed. Full attention: S*S_kv pairs.
// Causal over a square (S == S_kv, where both alignments agree): S*S/2, the field's convention
// (FlashAttention's benchmarks), so TFLOP/s compare with theirs. Causal with S != S_kv: the
// visible pairs counted exactly, since halving is far off there (bottom-right S 512 over
// S_kv 8192 sees 97% of the pairs; top-left S 8192 over S_kv 512 sees 97% too).
double attention_flops(const AttentionParams& params);
// The rule attention_flops applied to this call, in words (the bench's footer).
const char* attention_flops_rule(const AttentionParams& params);
// Backward FLOPs: 2.5x the forward's (five GEMMs against two: S and dP recomputed or read,
// dV, dQ and dK), FlashAttention's convention.
inline double attention_backward_flops(const AttentionParams& params) { return 2.5 * attention_flops(params); }

}  // namespace attnprof::attention
