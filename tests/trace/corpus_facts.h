// tests/data/corpus/facts.json: how each real program of the corpus was built
// (scripts/corpus/make_corpus.py), the source of every expectation the corpus
// tests check.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/attention.h"
#include "test_paths.h"

namespace attnprof::test {

struct Facts {
  std::string name, family, impl, dtype, mode, tracer, expected_impl;
  std::int64_t layers = 0, steps = 0, forwards = 0, forward_calls = 0, backward_calls = 0;
  AttentionShape shape;
};

inline void PrintTo(const Facts& f, std::ostream* os) { *os << f.name; }

inline std::vector<Facts> corpus_facts() {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(data_file("corpus/facts.json"));
  std::vector<Facts> out;
  for (simdjson::dom::element v : doc.get_array()) {
    Facts f;
    f.name = std::string(std::string_view(v["name"]));
    f.family = std::string(std::string_view(v["family"]));
    f.impl = std::string(std::string_view(v["impl"]));
    f.dtype = std::string(std::string_view(v["dtype"]));
    f.mode = std::string(std::string_view(v["mode"]));
    f.tracer = std::string(std::string_view(v["tracer"]));
    f.layers = std::int64_t(v["layers"]);
    f.steps = std::int64_t(v["steps"]);
    f.forwards = std::int64_t(v["forwards"]);
    f.expected_impl = std::string(std::string_view(v["expected"]["implementation"]));
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
    out.push_back(f);
  }
  return out;
}

}  // namespace attnprof::test
