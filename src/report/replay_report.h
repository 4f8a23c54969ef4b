// doctor --replay's part of the reports: the measured saving per shape
// (analysis/replay.h) as text after the doctor report, and as the "replay"
// object of its JSON. The HTML report renders it in html_report.cpp.
#pragma once

#include <string>

#include "analysis/replay.h"
#include "common/json.h"

namespace attnprof::report {

void replay_text(std::string& out, const Replay& replay);
void replay_json(JsonWriter& j, const Replay& replay);  // writes "replay": {...}

}  // namespace attnprof::report
