// attnprof._cuda: the project's fused attention forward and backward on CUDA memory, launched on the
// caller's stream on the current device. attnprof.attention (python/attnprof/_torch.py) calls it with
// each tensor as (data pointer, shape, strides in elements): plain integers, where DLPack's import of
// nine tensors cost tens of microseconds of host time per call. _torch.py owns the tensors' dtype
// (passed as one code), device and lifetime; this module checks shapes and strides, and the library
// (fused::attention_forward / attention_backward) null pointers, sizes, alignment and the workspace.
// Refusals raise attnprof.InputError (a ValueError).
#include <nanobind/nanobind.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/tuple.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>

#include "attention/fused/attention_fn.h"
#include "attention/params.h"
#include "common/input_error.h"

namespace nb = nanobind;
using namespace attnprof;

namespace {

PyObject* input_error_type = nullptr;  // attnprof._core.InputError, held for the process's life

using Dims = std::array<std::int64_t, 4>;
// A 4-d tensor as _torch.py hands it over: data pointer, shape, strides in elements.
using View = std::tuple<std::uintptr_t, Dims, Dims>;
// A 3-d or smaller contiguous tensor (lse, block_table, seq_lens): data pointer and shape; 0 is none.
using Flat = std::tuple<std::uintptr_t, std::array<std::int64_t, 2>>;

void* data(const View& t) { return reinterpret_cast<void*>(std::get<0>(t)); }
const Dims& shape(const View& t) { return std::get<1>(t); }
const Dims& stride(const View& t) { return std::get<2>(t); }

attention::DType dtype_of(int code) {
  if (code == 0) return attention::DType::BF16;
  if (code == 1) return attention::DType::FP16;
  throw InputError("attnprof.attention: dtype code " + std::to_string(code) +
                   " is neither bfloat16 (0) nor float16 (1), the fused kernel's inputs");
}

attention::TensorStrides strides_of(const View& t, const char* name) {
  for (std::int64_t n : shape(t))
    if (n < 0) throw InputError(std::string("attnprof.attention: ") + name + " has a negative size");
  if (stride(t)[3] != 1 && shape(t)[3] > 1)
    throw InputError(std::string("attnprof.attention: ") + name + "'s last dimension must be contiguous (stride 1)");
  return {stride(t)[0], stride(t)[1], stride(t)[2]};
}

// q: [B, Hq, Sq, D], k and v: [B, Hkv, Skv, D], any strides with a contiguous last dim
// (so both BHSD and BSHD memory); out: [B, Hq, Sq, D]; lse: [B, Hq, Sq] contiguous fp32.
// Paged (block_table given): k and v are page pools [pages, page_size, Hkv, D] (vLLM's and FlashInfer's
// layout), block_table [B, pages a sequence] int32 contiguous, seq_lens [B] int32 (each sequence's
// keys); with seq_lens alone, k and v are dense [B, Hkv, Skv, D] and sequence b has seq_lens[b] of their
// Skv keys. A Flat's pointer 0 is an absent tensor.
attention::AttentionParams params_of(int dtype, const View& q, const View& k, const View& v, const View& out,
                                     std::uintptr_t lse, bool causal, double scale, bool bottom_right,
                                     const Flat& block_table, const Flat& seq_lens) {
  attention::AttentionParams p;
  p.dtype = dtype_of(dtype);
  p.batch = static_cast<int>(shape(q)[0]);
  p.q_heads = static_cast<int>(shape(q)[1]);
  p.q_len = static_cast<int>(shape(q)[2]);
  p.head_dim = static_cast<int>(shape(q)[3]);
  p.q_strides = strides_of(q, "q");
  const bool paged = std::get<0>(block_table) != 0;
  const bool ragged = std::get<0>(seq_lens) != 0;
  if (paged) {
    // k, v: [pages, page_size, Hkv, D]; the kernel's strides: between pages, between heads, between tokens.
    if (!ragged) throw InputError("attnprof.attention: a block_table needs seq_lens (each sequence's keys)");
    if (shape(k) != shape(v)) throw InputError("attnprof.attention: the key and value page pools must have one shape");
    if (shape(k)[3] != shape(q)[3])
      throw InputError("attnprof.attention: shapes do not match: q [B, Hq, Sq, D], pages [P, page_size, Hkv, D]");
    if (std::get<1>(block_table)[0] != shape(q)[0])
      throw InputError("attnprof.attention: block_table must have a row per sequence of q ([B, pages a sequence])");
    strides_of(k, "the key page pool");
    strides_of(v, "the value page pool");
    p.kv_heads = static_cast<int>(shape(k)[2]);
    p.page_size = static_cast<int>(shape(k)[1]);
    p.block_table_stride = static_cast<int>(std::get<1>(block_table)[1]);
    p.kv_len = p.page_size * p.block_table_stride;  // the table's capacity: each sequence's own from seq_lens
    p.block_table = reinterpret_cast<const std::int32_t*>(std::get<0>(block_table));
    p.k_strides = {stride(k)[0], stride(k)[2], stride(k)[1]};
    p.v_strides = {stride(v)[0], stride(v)[2], stride(v)[1]};
  } else {
    p.kv_heads = static_cast<int>(shape(k)[1]);
    p.kv_len = static_cast<int>(shape(k)[2]);
    if (shape(k)[0] != shape(q)[0] || shape(k)[3] != shape(q)[3] || shape(v) != shape(k))
      throw InputError("attnprof.attention: shapes do not match: q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D]");
    p.k_strides = strides_of(k, "k");
    p.v_strides = strides_of(v, "v");
  }
  if (ragged) {
    if (std::get<1>(seq_lens)[0] != shape(q)[0])
      throw InputError("attnprof.attention: seq_lens must have one entry per sequence of q ([B])");
    p.seq_lens = reinterpret_cast<const std::int32_t*>(std::get<0>(seq_lens));
  }
  if (shape(out) != shape(q)) throw InputError("attnprof.attention: out must have q's shape");
  p.out_strides = strides_of(out, "out");
  if (lse == 0) throw InputError("attnprof.attention: lse has no data");
  p.layout = attention::Layout::BHSD;  // strides above are what counts
  p.causal = causal;
  if (bottom_right && !causal) throw InputError("attnprof.attention: bottom_right needs causal");
  p.causal_align = bottom_right ? attention::CausalAlign::BottomRight : attention::CausalAlign::TopLeft;
  p.scale = static_cast<float>(scale);
  p.q = data(q);
  p.k = data(k);
  p.v = data(v);
  p.out = data(out);
  p.lse = reinterpret_cast<float*>(lse);
  return p;
}

// The scratch a call of these sizes may use beyond out and lse, on the current device (the fused
// kernel's split tail, the decode kernel's split partials; 0 for many calls). Plain integers: no tensor
// crosses, so asking is cheap. ragged: the keys come paged or per sequence (the decode kernel takes them).
std::size_t workspace_bytes(int batch, int q_heads, int kv_heads, int q_len, int kv_len, int head_dim, bool causal,
                            bool ragged) {
  // Only the sizes, the causal flag and ragged count; dtype, layout and the pointers are placeholders.
  attention::AttentionParams p = attention::make_params(batch, q_heads, kv_heads, q_len, kv_len, head_dim, causal,
                                                        attention::DType::BF16, attention::Layout::BHSD);
  static const int placeholder = 0;
  if (ragged) p.seq_lens = &placeholder;  // never read: the scratch depends on the sizes alone
  return fused::attention_scratch(p);
}

// The forward on the current device: out and lse written. workspace: workspace_bytes() bytes of CUDA
// memory, or pointer 0 (the kernel then does without).
void forward(int dtype, const View& q, const View& k, const View& v, const View& out, std::uintptr_t lse, bool causal,
             double scale, std::uintptr_t stream, bool bottom_right, std::uintptr_t workspace,
             std::size_t workspace_size, const Flat& block_table, const Flat& seq_lens) {
  const attention::AttentionParams p =
      params_of(dtype, q, k, v, out, lse, causal, scale, bottom_right, block_table, seq_lens);
  void* ws = reinterpret_cast<void*>(workspace);
  nb::gil_scoped_release quiet;
  fused::attention_forward(p, attention::ExecContext{reinterpret_cast<void*>(stream), ws, ws ? workspace_size : 0});
}

// The scratch backward() needs for a call of these sizes (attention_backward_workspace).
std::size_t backward_workspace_bytes(int batch, int q_heads, int kv_heads, int q_len, int kv_len, int head_dim,
                                     bool causal) {
  attention::AttentionParams p = attention::make_params(batch, q_heads, kv_heads, q_len, kv_len, head_dim, causal,
                                                        attention::DType::BF16, attention::Layout::BHSD);
  static float placeholder = 0.f;
  p.lse = &placeholder;  // the caller keeps the forward's lse: none of it in the workspace
  return fused::attention_backward_workspace(p);
}

// The gradients of forward()'s call from d_out (shaped and strided as out): dq like q, dk like k, dv like v.
void backward(int dtype, const View& q, const View& k, const View& v, const View& out, std::uintptr_t lse,
              const View& d_out, const View& dq, const View& dk, const View& dv, bool causal, double scale,
              std::uintptr_t stream, bool bottom_right, std::uintptr_t workspace, std::size_t workspace_size) {
  const Flat none{0, {0, 0}};
  const attention::AttentionParams p = params_of(dtype, q, k, v, out, lse, causal, scale, bottom_right, none, none);
  const View* grads[] = {&d_out, &dq, &dk, &dv};
  const View* like[] = {&out, &q, &k, &v};
  const char* names[] = {"d_out", "dq", "dk", "dv"};
  const char* like_names[] = {"out", "q", "k", "v"};
  for (int i = 0; i < 4; ++i) {
    if (shape(*grads[i]) != shape(*like[i]) || stride(*grads[i]) != stride(*like[i]))
      throw InputError(std::string("attnprof.attention: ") + names[i] + " must have the shape and strides of " +
                       like_names[i]);
  }
  const attention::AttentionGrads g{data(d_out), data(dq), data(dk), data(dv)};
  const attention::ExecContext ctx{reinterpret_cast<void*>(stream), reinterpret_cast<void*>(workspace), workspace_size};
  nb::gil_scoped_release quiet;
  fused::attention_backward(p, g, ctx);
}

}  // namespace

NB_MODULE(_cuda, m) {
  m.doc() = "attnprof's fused attention kernel on CUDA tensors; use attnprof.attention";
  input_error_type = nb::object(nb::module_::import_("attnprof._core").attr("InputError")).release().ptr();
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(input_error_type, e.what());
    }
  });
  m.def("forward", &forward, nb::arg("dtype"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse"),
        nb::arg("causal"), nb::arg("scale"), nb::arg("stream"), nb::arg("bottom_right"), nb::arg("workspace"),
        nb::arg("workspace_size"), nb::arg("block_table"), nb::arg("seq_lens"));
  m.def("workspace_bytes", &workspace_bytes, nb::arg("batch"), nb::arg("q_heads"), nb::arg("kv_heads"),
        nb::arg("q_len"), nb::arg("kv_len"), nb::arg("head_dim"), nb::arg("causal"), nb::arg("ragged") = false);
  m.def("backward", &backward, nb::arg("dtype"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"),
        nb::arg("lse"), nb::arg("d_out"), nb::arg("dq"), nb::arg("dk"), nb::arg("dv"), nb::arg("causal"),
        nb::arg("scale"), nb::arg("stream"), nb::arg("bottom_right"), nb::arg("workspace"), nb::arg("workspace_size"));
  m.def("backward_workspace_bytes", &backward_workspace_bytes, nb::arg("batch"), nb::arg("q_heads"),
        nb::arg("kv_heads"), nb::arg("q_len"), nb::arg("kv_len"), nb::arg("head_dim"), nb::arg("causal"));
}
