// What `attnprof doctor` builds from a trace, kept together for tests: the
// trace, its index and the analysis (the index points into the trace).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "analysis/analysis.h"
#include "trace/trace_reader.h"

namespace attnprof::test {

struct Doctor {
  Trace trace;
  std::unique_ptr<TraceIndex> index;
  Analysis analysis;
  explicit Doctor(const std::string& path, const std::string& region = "", ReadDetail detail = ReadDetail::Analysis)
      : trace(read_trace_file(path, ReadOptions{.detail = detail})) {
    index = std::make_unique<TraceIndex>(trace);
    analysis = analyze(*index, {region}, path);
  }
  // The first finding with this id (and scope, when given).
  const Finding* find(std::string_view id) const {
    for (const auto& f : analysis.findings)
      if (f.id == id) return &f;
    return nullptr;
  }
  const Finding* find(std::string_view id, Scope scope) const {
    for (const auto& f : analysis.findings)
      if (f.id == id && f.scope == scope) return &f;
    return nullptr;
  }
  int count(std::string_view id) const {
    return static_cast<int>(std::count_if(analysis.findings.begin(), analysis.findings.end(),
                                          [&](const Finding& f) { return f.id == id; }));
  }
};

}  // namespace attnprof::test
