// EventParser's args (see event_parser.h): a GPU activity's or a launch call's
// args (correlation, grid, block, bytes, stream, ...) and an op's record_shapes
// inputs. Lenient: every producer fills args differently, so a value that is not
// what is wanted is skipped, as long as it is JSON.
#include "trace/event_parser.h"

#include <cstdint>
#include <string>
#include <vector>

#include "trace/catalogue.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

namespace od = simdjson::ondemand;
namespace cat = catalogue;

// An object key as written in the JSON (escapes not decoded): the catalogue's
// keys have no characters that need escaping, so a byte comparison is exact.
struct Key {
  od::raw_json_string raw;
  bool operator==(std::string_view known) const { return raw.unsafe_is_equal(known); }
};

}  // namespace

// Args values are producer-specific: a value that is not the number wanted is
// ignored, as long as it is some JSON value (check_unread); otherwise the text
// is broken and that is an error, the same whether the value is read or not.
// An integer is tried first: it is by far the most common value, and a failed
// attempt consumes nothing.
bool EventParser::arg_int(od::value& v, std::int64_t& out) {
  if (v.get_int64().get(out) == simdjson::SUCCESS) return true;
  od::json_type type;
  if (auto err = v.type().get(type); err) json_error(err);
  if (type != od::json_type::number) return false;
  double d = 0;
  if (v.get_double().get(d)) return false;
  const auto as_int = json_text::double_to_int64(d);
  if (as_int) out = *as_int;
  return as_int.has_value();
}

void EventParser::arg_dim3(od::value& v, std::array<std::int32_t, 3>& out) {
  od::array a;
  if (v.get_array().get(a)) {
    check_unread(v);
    return;
  }
  std::size_t i = 0;
  for (auto x : a) {
    std::int64_t n = 0;
    od::value xv;
    if (auto err = x.get(xv); err) json_error(err);
    if (!arg_int(xv, n)) return;
    if (i < 3) out[i] = static_cast<std::int32_t>(n);
    ++i;
  }
}

void EventParser::read_args(od::object args, Event& ev, GpuArgs& g, bool lean) {
  // Fields and values by reference: simdjson's iterators are small structs
  // whose copies cost store-forwarding stalls in this loop. Keys are told
  // apart on their first byte; most keys Kineto writes into args ("Record
  // function id", "Sequence number", ...) are skipped unread on it (see check_unread).
  for (auto item : args) {
    if (auto err = item.error(); err) json_error(err);
    od::field& field = item.value_unsafe();
    const Key key{field.key()};
    od::value& v = field.value();
    std::int64_t n = 0;
    std::int32_t* narrow = nullptr;  // an int32 field to fill from n
    float* real = nullptr;           // a float field
    const char first = *key.raw.raw();
    // The analysis reads correlation, grid, block, bytes and stream only.
    if (lean && first != 'c' && first != 'g' && first != 'b' && first != 's') {
      check_unread(v);
      continue;
    }
    switch (first) {
      case 'E':
        if (key == cat::kExternalId) {
          if (arg_int(v, n)) ev.external_id = n;
          continue;
        }
        break;
      case 'c':
        if (key == cat::kCorrelation) {
          if (arg_int(v, n)) ev.correlation = n;
          continue;
        }
        if (key == cat::kContext && !lean) narrow = &g.context;
        break;
      case 'g':
        if (key == cat::kGrid) {
          arg_dim3(v, g.grid);
          continue;
        }
        break;
      case 'b':
        if (key == cat::kBlock) {
          arg_dim3(v, g.block);
          continue;
        }
        if (key == cat::kBytes) {
          if (arg_int(v, n)) g.bytes = n;
          continue;
        }
        if (key == cat::kBlocksPerSm && !lean) real = &g.blocks_per_sm;
        break;
      case 'd':
        if (key == cat::kDevice)
          narrow = &g.device;
        else if (key == cat::kDynamicSharedMemory)
          narrow = &g.dynamic_shared_memory;
        break;
      case 's':
        if (key == cat::kStream) {
          if (arg_int(v, n)) g.stream = n;
          continue;
        }
        if (key == cat::kSharedMemory && !lean) narrow = &g.shared_memory;
        break;
      case 'r':
        if (key == cat::kRegistersPerThread) narrow = &g.registers_per_thread;
        break;
      case 'w':
        if (key == cat::kWarpsPerSm) real = &g.warps_per_sm;
        break;
      case 'e':
        if (key == cat::kOccupancy) real = &g.occupancy_pct;
        break;
      default:
        break;
    }
    if (narrow != nullptr) {
      if (arg_int(v, n)) *narrow = static_cast<std::int32_t>(n);
    } else if (real != nullptr) {
      double d = 0;
      if (v.get_double().get(d))
        check_unread(v);
      else if (d > -3e38 && d < 3e38)
        *real = static_cast<float>(d);
    } else {
      check_unread(v);
    }
  }
}

// record_shapes writes "Input Dims" and "Input Strides" as lists of lists (a
// tensor list as a list of lists of lists), "Input type" and "Concrete Inputs"
// as lists of strings. Anything else there is ignored, as long as it is JSON.
void EventParser::read_op_inputs(od::object args, OpInputs& out) {
  for (auto item : args) {
    if (auto err = item.error(); err) json_error(err);
    od::field& field = item.value_unsafe();
    const Key key{field.key()};
    od::value& v = field.value();
    std::vector<std::vector<std::int64_t>>* shapes = key == cat::kInputDims      ? &out.dims
                                                     : key == cat::kInputStrides ? &out.strides
                                                                                 : nullptr;
    std::vector<std::string>* strings = key == cat::kInputType        ? &out.types
                                        : key == cat::kConcreteInputs ? &out.concrete
                                                                      : nullptr;
    od::array list;
    if ((shapes == nullptr && strings == nullptr) || v.get_array().get(list) != simdjson::SUCCESS) {
      check_unread(v);
      continue;
    }
    for (auto element : list) {
      if (auto err = element.error(); err) json_error(err);
      od::value& e = element.value_unsafe();
      if (strings != nullptr) {
        std::string_view text;
        if (e.get_string().get(text) == simdjson::SUCCESS)
          strings->emplace_back(text);
        else {
          check_unread(e);
          strings->emplace_back();
        }
        continue;
      }
      std::vector<std::int64_t>& shape = shapes->emplace_back();
      od::array sizes;
      if (e.get_array().get(sizes) != simdjson::SUCCESS) {
        check_unread(e);
        continue;
      }
      const bool first_list = shapes == &out.dims && out.list_dims.empty();
      bool in_list = false;
      for (auto size : sizes) {
        if (auto err = size.error(); err) json_error(err);
        std::int64_t n = 0;
        if (!in_list && arg_int(size.value_unsafe(), n)) {
          shape.push_back(n);
          continue;
        }
        in_list = true;  // a tensor list: not one shape; the first one's tensors are kept
        shape.clear();
        od::array tensor;
        if (!first_list || size.value_unsafe().get_array().get(tensor) != simdjson::SUCCESS) {
          check_unread(size.value_unsafe());
          continue;
        }
        std::vector<std::int64_t>& t = out.list_dims.emplace_back();
        for (auto d : tensor) {
          if (auto err = d.error(); err) json_error(err);
          std::int64_t m = 0;
          if (arg_int(d.value_unsafe(), m))
            t.push_back(m);
          else
            check_unread(d.value_unsafe());
        }
      }
    }
  }
}

bool EventParser::keeps_inputs(StringId name) {
  if (name >= keeps_inputs_.size()) keeps_inputs_.resize(name + 1, kUnresolved);
  std::int8_t& k = keeps_inputs_[name];
  if (k == kUnresolved) k = keeps_op_inputs(trace_.strings.view(name)) ? 1 : 0;
  return k == 1;
}

}  // namespace attnprof
