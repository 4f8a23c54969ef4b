// tests/data/corpus/facts.json: how each real program of the corpus was built
// (scripts/corpus/make_corpus.py), the source of every expectation the corpus
// tests check.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/attention.h"
#include "test_paths.h"

namespace attnprof::test {

struct Facts {
  std::string name, family, impl, dtype, mode, tracer, expected_impl;
  std::string folder;          // under tests/data: where the facts file and the traces are
  std::string gpu;             // the GPU the program ran on, where the facts say ("NVIDIA H200")
  std::string kind = "plain";  // the wild set's: generate, amp, padded, compile, cudagraph, checkpoint, stack
  std::string form;            // the forms set's: softcap, sinks, weights (what the unfused calls' scores show)
  // The serving set's generate() programs: calls per phase, and the decode calls' KV lengths (first, last).
  std::int64_t prefill_calls = 0, decode_calls = 0, decode_kv_first = 0, decode_kv_last = 0;
  std::int64_t mixed_calls = 0;   // packed forwards of more query rows than a decode's that read a cache
  std::int64_t decode_q_len = 1;  // a decode forward's queries (continuous batching packs one a request)
  std::int64_t kv_gathers = -1;   // gathers of a paged cache into dense K/V (one for K, one for V); -1 not said
  std::string kv_cache;           // "dynamic": grown by torch.cat every token (transformers' DynamicCache)
  std::int64_t layers = 0, steps = 0, forwards = 0, forward_calls = 0, backward_calls = 0;
  bool record_shapes = true;  // false where the profiler ran without record_shapes (the steps set's noshapes)
  AttentionShape shape;
  std::int64_t decoder_len = 0;  // encoder-decoders: the decoder's length (shape.q_len is the encoder's)
  // The precisions the trace can show for q, k, v: dtype, unless the facts list more.
  std::vector<std::string> precisions;
  // (implementation, pass) -> calls: one implementation, or the facts' calls_by_implementation.
  std::map<std::pair<std::string, std::string>, std::int64_t> calls;
};

inline void PrintTo(const Facts& f, std::ostream* os) { *os << f.name; }

// file: under tests/data (corpus/facts.json, regimes/facts.json).
inline std::vector<Facts> corpus_facts(const std::string& file = "corpus/facts.json") {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(data_file(file));
  std::vector<Facts> out;
  for (simdjson::dom::element v : doc.get_array()) {
    Facts f;
    f.name = std::string(std::string_view(v["name"]));
    f.folder = file.substr(0, file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/'));
    if (std::string_view gpu; v["gpu"].get(gpu) == simdjson::SUCCESS) f.gpu = std::string(gpu);
    f.family = std::string(std::string_view(v["family"]));
    f.impl = std::string(std::string_view(v["impl"]));
    f.dtype = std::string(std::string_view(v["dtype"]));
    f.mode = std::string(std::string_view(v["mode"]));
    f.tracer = std::string(std::string_view(v["tracer"]));
    f.layers = std::int64_t(v["layers"]);
    f.steps = std::int64_t(v["steps"]);
    f.forwards = std::int64_t(v["forwards"]);
    if (bool shapes = true; v["record_shapes"].get(shapes) == simdjson::SUCCESS) f.record_shapes = shapes;
    f.expected_impl = std::string(std::string_view(v["expected"]["implementation"]));
    // null: not known from the construction (a serving manager's own forwards around its graphs): -1
    if (v["expected"]["forward_calls"].is_null())
      f.forward_calls = -1;
    else
      f.forward_calls = std::int64_t(v["expected"]["forward_calls"]);
    f.backward_calls = std::int64_t(v["expected"]["backward_calls"]);
    const auto s = v["shape"];
    f.shape.batch = std::int64_t(s["batch"]);
    f.shape.q_heads = std::int64_t(s["q_heads"]);
    f.shape.kv_heads = std::int64_t(s["kv_heads"]);
    f.shape.q_len = std::int64_t(s["q_len"]);
    f.shape.kv_len = std::int64_t(s["kv_len"]);
    f.shape.head_dim = std::int64_t(s["head_dim"]);
    f.shape.causal = bool(s["causal"]);
    std::string_view kind;
    if (v["kind"].get(kind) == simdjson::SUCCESS) f.kind = std::string(kind);
    std::int64_t dec = 0;
    if (s["decoder_len"].get(dec) == simdjson::SUCCESS) f.decoder_len = dec;
    const auto e = v["expected"];
    std::string_view form;
    if (e["form"].get(form) == simdjson::SUCCESS) f.form = std::string(form);
    if (std::string_view cache; e["kv_cache"].get(cache) == simdjson::SUCCESS) f.kv_cache = std::string(cache);
    if (std::int64_t n = 0; e["phases"]["prefill"].get(n) == simdjson::SUCCESS) f.prefill_calls = n;
    if (std::int64_t n = 0; e["phases"]["decode"].get(n) == simdjson::SUCCESS) f.decode_calls = n;
    if (std::int64_t n = 0; e["phases"]["mixed"].get(n) == simdjson::SUCCESS) f.mixed_calls = n;
    if (std::int64_t n = 0; e["decode_q_len"].get(n) == simdjson::SUCCESS) f.decode_q_len = n;
    if (std::int64_t n = 0; e["kv_gathers"].get(n) == simdjson::SUCCESS) f.kv_gathers = n;
    if (simdjson::dom::array kv; e["decode_kv_len"].get(kv) == simdjson::SUCCESS && kv.size() == 2) {
      f.decode_kv_first = std::int64_t(kv.at(0));
      f.decode_kv_last = std::int64_t(kv.at(1));
    }
    simdjson::dom::array accepted;
    if (e["precision"].get(accepted) == simdjson::SUCCESS)
      for (auto a : accepted)
        f.precisions.emplace_back(a.is_null() ? std::string_view("unknown") : std::string_view(a));
    else
      f.precisions = {f.dtype};
    simdjson::dom::object by_impl;
    if (e["calls_by_implementation"].get(by_impl) == simdjson::SUCCESS) {
      for (auto [impl, passes] : by_impl)
        for (const char* pass : {"forward", "backward"})
          if (const std::int64_t n = std::int64_t(passes[pass]); n > 0) f.calls[{std::string(impl), pass}] = n;
    } else {
      if (f.forward_calls > 0) f.calls[{f.expected_impl, "forward"}] = f.forward_calls;
      if (f.backward_calls > 0) f.calls[{f.expected_impl, "backward"}] = f.backward_calls;
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace attnprof::test
