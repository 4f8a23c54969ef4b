// doctor --replay's part of the reports: the measured saving per shape
// (analysis/replay.h) as text after the doctor report, and as the "replay"
// object of its JSON. The HTML report renders it in html_report.cpp.
#pragma once

#include <string>

#include "analysis/replay.h"
#include "common/json.h"

namespace attnprof::report {

void replay_text(std::string& out, const Replay& replay);
// A shape that reads a KV cache (its rows carry bytes): what a call moves in each of its rows' dtypes,
// "4.22 MB in bf16, 8.44 MB in fp32"; "" for other shapes. The text and HTML reports say it alike.
std::string replay_bytes_per_dtype(const ReplayShape& shape);
void replay_json(JsonWriter& j, const Replay& replay);  // writes "replay": {...}

}  // namespace attnprof::report
