// Small helpers on the in-memory trace.
#include "trace/trace.h"

#include <algorithm>

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
         op == "aten::bmm" || op == "aten::matmul" || op == "aten::baddbmm" || op == "aten::mean" ||
         op == "aten::add" || op == "aten::add_" || op == "aten::reshape" || op == "aten::cat" || op == "aten::le" ||
         op == "aten::ge" || op == "aten::index_select" ||  // a paged KV cache's gather (kv_cache_gather.h)
         (op.starts_with("triton_tem_") && op.find("flex_attention") != std::string_view::npos) ||
         // Inductor's pointwise kernels that expand a tensor: repeat_kv's copy under torch.compile (kv_repeat.h)
         (op.starts_with("triton_poi_") && op.find("expand") != std::string_view::npos);
}

const OpInputs* Trace::op_inputs_of(std::uint32_t e) const {
  const auto it = std::lower_bound(op_inputs.begin(), op_inputs.end(), e,
                                   [](const OpInputs& in, std::uint32_t v) { return in.event < v; });
  return it != op_inputs.end() && it->event == e ? &*it : nullptr;
}

void Trace::merge_metadata(const Trace& other) {
  for (const auto& d : other.devices)
    if (device(d.id) == nullptr) devices.push_back(d);
  dropped_records += other.dropped_records;
  if (other.cupti_version >= 0) cupti_version = other.cupti_version;
  if (other.cuda_driver_version >= 0) cuda_driver_version = other.cuda_driver_version;
  if (other.cuda_runtime_version >= 0) cuda_runtime_version = other.cuda_runtime_version;
}

void Trace::append_events(const Trace& other, std::size_t first, std::size_t last) {
  auto reintern = [&](StringId id) { return id == kNoString ? kNoString : strings.intern(other.strings.view(id)); };
  auto lane = [&](Lane l) { return l.is_string ? Lane{reintern(static_cast<StringId>(l.value())), true} : l; };
  events.reserve(events.size() + (last - first));
  for (std::size_t i = first; i < last; ++i) {
    Event e = other.events[i];
    e.name = reintern(e.name);
    e.category = reintern(e.category);
    e.pid = lane(e.pid);
    e.tid = lane(e.tid);
    e.gpu_args = Event::kNoGpuArgs;
    add(e, other.args(other.events[i]));
  }
}

}  // namespace attnprof
