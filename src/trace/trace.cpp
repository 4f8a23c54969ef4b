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

void Trace::merge_metadata(const Trace& other) {
  for (const auto& d : other.devices)
    if (device(d.id) == nullptr) devices.push_back(d);
  dropped_records += other.dropped_records;
  if (other.cupti_version >= 0) cupti_version = other.cupti_version;
  if (other.cuda_driver_version >= 0) cuda_driver_version = other.cuda_driver_version;
  if (other.cuda_runtime_version >= 0) cuda_runtime_version = other.cuda_runtime_version;
}

}  // namespace attnprof
