// Every real program of tests/data with the facts of how it was built (facts.json of each set, the steps set's
// own layout), for the tests that check a finding on all of them (kv-repeat, kv-cache-gather, unsplit-decode).
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "corpus_facts.h"
#include "test_doctor.h"
#include "test_paths.h"

namespace attnprof::test {

// tests/data/steps/facts.json's programs (its idle_* programs have no attention): its own layout, the fields
// these tests read.
inline std::vector<Facts> steps_programs() {
  simdjson::dom::parser parser;
  std::vector<Facts> out;
  for (simdjson::dom::element v : parser.load(data_file("steps/facts.json")).get_array()) {
    simdjson::dom::element e;
    if (v["expected"].get(e) != simdjson::SUCCESS) continue;
    Facts p;
    p.name = std::string(std::string_view(v["name"]));
    p.folder = "steps";
    p.impl = std::string(std::string_view(v["impl"]));
    p.kind = std::string(std::string_view(v["kind"]));
    p.dtype = std::string(std::string_view(v["dtype"]));
    p.tracer = std::string(std::string_view(v["tracer"]));
    p.record_shapes = bool(v["record_shapes"]);
    p.layers = std::int64_t(v["layers"]);
    for (const char* k : {"batch", "q_heads", "kv_heads", "q_len", "kv_len", "head_dim"}) {
      const std::int64_t n = std::int64_t(v["shape"][k]);
      std::string_view key(k);
      (key == "batch"      ? p.shape.batch
       : key == "q_heads"  ? p.shape.q_heads
       : key == "kv_heads" ? p.shape.kv_heads
       : key == "q_len"    ? p.shape.q_len
       : key == "kv_len"   ? p.shape.kv_len
                           : p.shape.head_dim) = n;
    }
    p.forward_calls = std::int64_t(e["forward_calls"]);
    p.backward_calls = std::int64_t(e["backward_calls"]);
    out.push_back(std::move(p));
  }
  return out;
}

inline std::vector<Facts> every_program() {
  std::vector<Facts> all = steps_programs();
  for (const char* set : {"corpus", "regimes", "forms", "serving", "serving/grid", "serving/continuous",
                          "serving/graphs", "serving/paged"})
    for (Facts& p : corpus_facts(std::string(set) + "/facts.json")) all.push_back(std::move(p));
  return all;
}

inline std::string trace_of(const Facts& p) { return data_file(p.folder + "/" + p.name + ".json.gz"); }
inline Doctor doctor(const Facts& p) { return Doctor(trace_of(p)); }

inline const Facts& program(const std::string& name) {
  static const std::vector<Facts> all = every_program();
  const auto it = std::find_if(all.begin(), all.end(), [&](const Facts& p) { return p.name == name; });
  if (it == all.end()) throw std::runtime_error("no facts for " + name);
  return *it;
}

// Every trace under tests/data and examples/traces (.json and .json.gz, in every folder but the fuzzer's
// crash inputs), sorted: what is not a trace there is facts.json, a README, a license and the bench's report.
inline std::vector<std::string> every_trace_file() {
  std::vector<std::string> out;
  for (const auto& dir : {data_file(""), std::string(ATTNPROF_SOURCE_DIR) + "/examples/traces"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || name == "facts.json" || e.path().parent_path().filename() == "fuzz" ||
          e.path().parent_path().filename() == "bench")
        continue;
      if (name.ends_with(".json") || name.ends_with(".json.gz")) out.push_back(e.path().lexically_normal().string());
    }
  std::sort(out.begin(), out.end());
  return out;
}

// The bytes of an element of the program's dtype.
inline double element_bytes(const Facts& p) { return p.dtype == "fp32" ? 4 : 2; }

// Expects none of finding f's kernels in another finding of d (but `except`, which may name them).
inline void expect_kernels_in_no_other_finding(const Doctor& d, const Finding& f, std::string_view except = {}) {
  for (const Finding& other : d.analysis.findings) {
    if (&other == &f || (!except.empty() && other.id == except)) continue;
    for (std::size_t a : other.activities)
      EXPECT_FALSE(std::binary_search(f.activities.begin(), f.activities.end(), a)) << other.id;
  }
}

// Expects finding `id` in no trace of every_trace_file() but those of the programs `fires` names (those it
// does not read); returns how many programs it named and how many other traces it read.
template <typename Fires>
std::pair<std::size_t, int> expect_finding_only_in(std::string_view id, Fires&& fires) {
  std::set<std::string> firing;
  for (const Facts& p : every_program())
    if (fires(p)) firing.insert(std::filesystem::path(trace_of(p)).lexically_normal().string());
  int traces = 0;
  for (const std::string& file : every_trace_file()) {
    if (firing.contains(file)) continue;
    SCOPED_TRACE(file);
    ++traces;
    EXPECT_EQ(Doctor(file).find(id), nullptr);
  }
  return {firing.size(), traces};
}

// A test name from a program's.
inline std::string program_test_name(const ::testing::TestParamInfo<Facts>& param) {
  std::string name = param.param.name;
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name;
}

}  // namespace attnprof::test
