// attnprof._cuda: the project's fused attention forward and backward on CUDA tensors,
// zero-copy through DLPack (nanobind ndarrays), launched on the caller's
// stream. attnprof.attention (python/attnprof/_torch.py) wraps it as a
// torch.library custom op. Refusals raise attnprof.InputError (a ValueError).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "attention/fused/attention_fn.h"
#include "attention/params.h"
#include "common/input_error.h"

namespace nb = nanobind;
using namespace attnprof;

namespace {

using Tensor = nb::ndarray<nb::device::cuda, nb::ndim<4>>;

PyObject* input_error_type = nullptr;  // attnprof._core.InputError, held for the process's life

attention::DType dtype_of(const Tensor& t, const char* name) {
  const nb::dlpack::dtype d = t.dtype();
  if (d.bits == 16 && d.lanes == 1 && d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat))
    return attention::DType::BF16;
  if (d.bits == 16 && d.lanes == 1 && d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float))
    return attention::DType::FP16;
  throw InputError(std::string("attnprof.attention: ") + name +
                   " must be bfloat16 or float16 (the fused kernel's inputs), got another dtype");
}

attention::TensorStrides strides_of(const Tensor& t, const char* name) {
  if (t.stride(3) != 1 && t.shape(3) > 1)
    throw InputError(std::string("attnprof.attention: ") + name + "'s last dimension must be contiguous (stride 1)");
  return {t.stride(0), t.stride(1), t.stride(2)};
}

// q: [B, Hq, Sq, D], k and v: [B, Hkv, Skv, D], any strides with a contiguous last dim
// (so both BHSD and BSHD memory); out: [B, Hq, Sq, D]; lse: [B, Hq, Sq] contiguous fp32.
// Paged (block_table given): k and v are page pools [pages, page_size, Hkv, D] (vLLM's and FlashInfer's
// layout), block_table [B, pages a sequence] int32, seq_lens [B] int32 (each sequence's keys); with
// seq_lens alone, k and v are dense [B, Hkv, Skv, D] and sequence b has seq_lens[b] of their Skv keys.
using Lse = nb::ndarray<nb::device::cuda, float, nb::ndim<3>, nb::c_contig>;
using Table = nb::ndarray<nb::device::cuda, std::int32_t, nb::ndim<2>, nb::c_contig>;
using Lens = nb::ndarray<nb::device::cuda, std::int32_t, nb::ndim<1>, nb::c_contig>;
attention::AttentionParams params_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                     const Lse& lse, bool causal, double scale, bool bottom_right,
                                     const std::optional<Table>& block_table, const std::optional<Lens>& seq_lens) {
  attention::AttentionParams p;
  p.dtype = dtype_of(q, "q");
  if (dtype_of(k, "k") != p.dtype || dtype_of(v, "v") != p.dtype || dtype_of(out, "out") != p.dtype)
    throw InputError("attnprof.attention: q, k and v must have one dtype");
  if (q.device_id() != k.device_id() || q.device_id() != v.device_id() || q.device_id() != out.device_id())
    throw InputError("attnprof.attention: q, k and v must be on one GPU");
  p.batch = static_cast<int>(q.shape(0));
  p.q_heads = static_cast<int>(q.shape(1));
  p.q_len = static_cast<int>(q.shape(2));
  p.head_dim = static_cast<int>(q.shape(3));
  p.q_strides = strides_of(q, "q");
  const bool paged = block_table.has_value();
  if (paged) {
    // k, v: [pages, page_size, Hkv, D]; the kernel's strides: between pages, between heads, between tokens.
    if (!seq_lens) throw InputError("attnprof.attention: a block_table needs seq_lens (each sequence's keys)");
    for (int i = 0; i < 4; ++i)
      if (k.shape(i) != v.shape(i))
        throw InputError("attnprof.attention: the key and value page pools must have one shape");
    if (k.shape(3) != q.shape(3))
      throw InputError("attnprof.attention: shapes do not match: q [B, Hq, Sq, D], pages [P, page_size, Hkv, D]");
    if (block_table->shape(0) != q.shape(0))
      throw InputError("attnprof.attention: block_table must have a row per sequence of q ([B, pages a sequence])");
    p.kv_heads = static_cast<int>(k.shape(2));
    p.page_size = static_cast<int>(k.shape(1));
    p.block_table_stride = static_cast<int>(block_table->shape(1));
    p.kv_len = p.page_size * p.block_table_stride;  // the table's capacity: each sequence's own from seq_lens
    p.block_table = block_table->data();
    for (const auto* t : {&k, &v})
      if (t->stride(3) != 1 && t->shape(3) > 1)
        throw InputError("attnprof.attention: the page pools' last dimension must be contiguous (stride 1)");
    p.k_strides = {k.stride(0), k.stride(2), k.stride(1)};
    p.v_strides = {v.stride(0), v.stride(2), v.stride(1)};
  } else {
    p.kv_heads = static_cast<int>(k.shape(1));
    p.kv_len = static_cast<int>(k.shape(2));
    if (k.shape(0) != q.shape(0) || v.shape(0) != q.shape(0) || k.shape(3) != q.shape(3) || v.shape(1) != k.shape(1) ||
        v.shape(2) != k.shape(2) || v.shape(3) != q.shape(3))
      throw InputError("attnprof.attention: shapes do not match: q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D]");
    p.k_strides = strides_of(k, "k");
    p.v_strides = strides_of(v, "v");
  }
  if (seq_lens) {
    if (seq_lens->shape(0) != q.shape(0))
      throw InputError("attnprof.attention: seq_lens must have one entry per sequence of q ([B])");
    if (seq_lens->device_id() != q.device_id() || (paged && block_table->device_id() != q.device_id()))
      throw InputError("attnprof.attention: block_table and seq_lens must be on q's GPU");
    p.seq_lens = seq_lens->data();
  }
  p.out_strides = strides_of(out, "out");
  p.layout = attention::Layout::BHSD;  // strides above are what counts
  p.causal = causal;
  if (bottom_right && !causal) throw InputError("attnprof.attention: bottom_right needs causal");
  p.causal_align = bottom_right ? attention::CausalAlign::BottomRight : attention::CausalAlign::TopLeft;
  p.scale = static_cast<float>(scale);
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.out = out.data();
  p.lse = lse.data();
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

// workspace: workspace_bytes() bytes of CUDA memory, or None (the kernel then does without).
void forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Lse& lse, bool causal,
             double scale, std::uintptr_t stream, bool bottom_right,
             std::optional<nb::ndarray<nb::device::cuda, std::uint8_t, nb::ndim<1>, nb::c_contig>> workspace,
             std::optional<Table> block_table, std::optional<Lens> seq_lens) {
  const attention::AttentionParams p = params_of(q, k, v, out, lse, causal, scale, bottom_right, block_table, seq_lens);
  if (workspace && workspace->device_id() != q.device_id())
    throw InputError("attnprof.attention: the workspace must be on q's GPU");
  void* ws = workspace ? workspace->data() : nullptr;
  const std::size_t ws_bytes = workspace ? workspace->size() : 0;
  nb::gil_scoped_release quiet;
  fused::attention_forward(p, attention::ExecContext{reinterpret_cast<void*>(stream), ws, ws_bytes});
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

// The gradients of forward()'s call from d_out (like out): dq like q, dk like k, dv like v.
void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Lse& lse, const Tensor& d_out,
              const Tensor& dq, const Tensor& dk, const Tensor& dv, bool causal, double scale, std::uintptr_t stream,
              bool bottom_right,
              const nb::ndarray<nb::device::cuda, std::uint8_t, nb::ndim<1>, nb::c_contig>& workspace) {
  const attention::AttentionParams p =
      params_of(q, k, v, out, lse, causal, scale, bottom_right, std::nullopt, std::nullopt);
  const Tensor* grads[] = {&d_out, &dq, &dk, &dv};
  const Tensor* like[] = {&out, &q, &k, &v};
  const char* names[] = {"d_out", "dq", "dk", "dv"};
  for (int i = 0; i < 4; ++i) {
    if (dtype_of(*grads[i], names[i]) != p.dtype || grads[i]->device_id() != q.device_id())
      throw InputError(std::string("attnprof.attention: ") + names[i] + " must have q's dtype and GPU");
    for (int d = 0; d < 4; ++d)
      if (grads[i]->shape(d) != like[i]->shape(d) || grads[i]->stride(d) != like[i]->stride(d))
        throw InputError(std::string("attnprof.attention: ") + names[i] + " must have the shape and strides of " +
                         (i == 0   ? "out"
                          : i == 1 ? "q"
                          : i == 2 ? "k"
                                   : "v"));
  }
  if (workspace.device_id() != q.device_id()) throw InputError("attnprof.attention: the workspace must be on q's GPU");
  const attention::AttentionGrads g{d_out.data(), dq.data(), dk.data(), dv.data()};
  const attention::ExecContext ctx{reinterpret_cast<void*>(stream), workspace.data(), workspace.size()};
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
  m.def("forward", &forward, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse"),
        nb::arg("causal"), nb::arg("scale"), nb::arg("stream"), nb::arg("bottom_right") = false,
        nb::arg("workspace") = nb::none(), nb::arg("block_table") = nb::none(), nb::arg("seq_lens") = nb::none());
  m.def("workspace_bytes", &workspace_bytes, nb::arg("batch"), nb::arg("q_heads"), nb::arg("kv_heads"),
        nb::arg("q_len"), nb::arg("kv_len"), nb::arg("head_dim"), nb::arg("causal"), nb::arg("ragged") = false);
  m.def("backward", &backward, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse"),
        nb::arg("d_out"), nb::arg("dq"), nb::arg("dk"), nb::arg("dv"), nb::arg("causal"), nb::arg("scale"),
        nb::arg("stream"), nb::arg("bottom_right"), nb::arg("workspace"));
  m.def("backward_workspace_bytes", &backward_workspace_bytes, nb::arg("batch"), nb::arg("q_heads"),
        nb::arg("kv_heads"), nb::arg("q_len"), nb::arg("kv_len"), nb::arg("head_dim"), nb::arg("causal"));
}
