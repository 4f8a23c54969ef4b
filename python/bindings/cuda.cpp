// attnprof._cuda: the project's fused attention forward on CUDA tensors,
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
using Lse = nb::ndarray<nb::device::cuda, float, nb::ndim<3>, nb::c_contig>;
attention::AttentionParams params_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                     const Lse& lse, bool causal, double scale, bool bottom_right) {
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
  p.kv_heads = static_cast<int>(k.shape(1));
  p.kv_len = static_cast<int>(k.shape(2));
  if (k.shape(0) != q.shape(0) || v.shape(0) != q.shape(0) || k.shape(3) != q.shape(3) || v.shape(1) != k.shape(1) ||
      v.shape(2) != k.shape(2) || v.shape(3) != q.shape(3))
    throw InputError("attnprof.attention: shapes do not match: q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D]");
  p.q_strides = strides_of(q, "q");
  p.k_strides = strides_of(k, "k");
  p.v_strides = strides_of(v, "v");
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
// kernel's split tail; 0 for most calls). Plain integers: no tensor crosses, so asking is cheap.
std::size_t workspace_bytes(int batch, int q_heads, int kv_heads, int q_len, int kv_len, int head_dim, bool causal) {
  // Only the sizes and the causal flag count; dtype and layout are placeholders.
  return fused::attention_scratch(attention::make_params(batch, q_heads, kv_heads, q_len, kv_len, head_dim, causal,
                                                         attention::DType::BF16, attention::Layout::BHSD));
}

// workspace: workspace_bytes() bytes of CUDA memory, or None (the kernel then does without).
void forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Lse& lse, bool causal,
             double scale, std::uintptr_t stream, bool bottom_right,
             std::optional<nb::ndarray<nb::device::cuda, std::uint8_t, nb::ndim<1>, nb::c_contig>> workspace) {
  const attention::AttentionParams p = params_of(q, k, v, out, lse, causal, scale, bottom_right);
  if (workspace && workspace->device_id() != q.device_id())
    throw InputError("attnprof.attention: the workspace must be on q's GPU");
  void* ws = workspace ? workspace->data() : nullptr;
  const std::size_t ws_bytes = workspace ? workspace->size() : 0;
  nb::gil_scoped_release quiet;
  fused::attention_forward(p, attention::ExecContext{reinterpret_cast<void*>(stream), ws, ws_bytes});
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
        nb::arg("workspace") = nb::none());
  m.def("workspace_bytes", &workspace_bytes, nb::arg("batch"), nb::arg("q_heads"), nb::arg("kv_heads"),
        nb::arg("q_len"), nb::arg("kv_len"), nb::arg("head_dim"), nb::arg("causal"));
}
