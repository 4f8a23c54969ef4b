// Small helpers on the in-memory trace.
#include "trace/trace.h"

namespace attnprof {

const DeviceProperties* Trace::device(int id) const {
  for (const auto& d : devices)
    if (d.id == id) return &d;
  return nullptr;
}

}  // namespace attnprof

namespace attnprof {

bool keeps_op_inputs(std::string_view op) {
  return op.starts_with("aten::scaled_dot_product_attention") || op.starts_with("aten::_scaled_dot_product_") ||
         op.starts_with("aten::_flash_attention") || op.starts_with("aten::_efficient_attention") ||
         op == "aten::bmm" || op == "aten::matmul" || op == "aten::baddbmm";
}

}  // namespace attnprof
