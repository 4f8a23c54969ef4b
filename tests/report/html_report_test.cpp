// The HTML report and the annotated trace on the study's traces (H200, three
// fwd ranges each: SDPA math 20 kernels a forward, hand-written 5 kernels plus
// a copy and a memset, SDPA flash one FlashAttention kernel) and on corpus
// programs. Expectations come from how the programs were built.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "analysis/analysis.h"
#include "report/annotate.h"
#include "report/html_report.h"
#include "test_doctor.h"
#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

using test::Doctor;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The timelines' kernel bars, per timeline (one <svg class="timeline"> each).
std::vector<std::size_t> bars_per_timeline(const std::string& html) {
  std::vector<std::size_t> out;
  for (std::size_t at = html.find("<svg class=\"timeline\""); at != std::string::npos;
       at = html.find("<svg class=\"timeline\"", at + 1)) {
    const std::size_t end = html.find("</svg>", at);
    out.push_back(count(html.substr(at, end - at), "<g class=\"kernel\">"));
  }
  return out;
}

// The text of every timeline.
std::string timelines(const std::string& html) {
  std::string out;
  for (std::size_t at = html.find("<svg class=\"timeline\""); at != std::string::npos;
       at = html.find("<svg class=\"timeline\"", at + 1))
    out += html.substr(at, html.find("</svg>", at) - at);
  return out;
}

TEST(HtmlReport, SdpaMathShowsEveryKernelAndEveryCause) {
  const Doctor d(test::example_trace("sdpa_math.json"));
  const std::string html = html_report(d.analysis, *d.index);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // One fwd instance: 20 kernels, all of them one attention call (so no second timeline for the call).
  EXPECT_EQ(bars_per_timeline(html), (std::vector<std::size_t>{20}));
  EXPECT_NE(html.find("This instance is one attention call"), std::string::npos);
  // The FP32 GEMMs on CUDA cores are drawn red and hatched; there is no tensor-core GEMM.
  EXPECT_EQ(count(timelines(html), "fill=\"url(#hatch)\""), 2u);  // QK^T and PV
  EXPECT_EQ(count(timelines(html), "fill=\"#2ca02c\""), 0u);
  EXPECT_NE(html.find("id=\"finding-unfused-attention-forward-attention\""), std::string::npos);
  EXPECT_EQ(count(html, "id=\"hatch\""), 1u);  // defined once for the page
  for (const char* id : {"cuda-core-gemm", "fp32-upcast", "mask-rebuilt", "safe-softmax"})
    EXPECT_NE(html.find(std::string("id=\"finding-") + id + "-attention\""), std::string::npos) << id;
  for (const char* id : {"unfused-attention", "cuda-core-gemm", "fp32-upcast", "mask-rebuilt", "safe-softmax"}) {
    EXPECT_NE(html.find(std::string(">") + id + " (attention)</text>"), std::string::npos) << id;  // time by cause
  }
  EXPECT_NE(html.find("<pre class=\"fix\">"), std::string::npos);
}

TEST(HtmlReport, FlashHasOneFusedKernelAndNoFindings) {
  const Doctor d(test::example_trace("sdpa_flash.json"));
  const std::string html = html_report(d.analysis, *d.index);
  EXPECT_EQ(bars_per_timeline(html), (std::vector<std::size_t>{1}));
  EXPECT_EQ(count(timelines(html), "fill=\"#1f77b4\"/>"), 1u);  // the fused-attention bar
  EXPECT_EQ(count(html, "class=\"finding\""), 0u);
  EXPECT_NE(html.find("No findings"), std::string::npos);
}

TEST(HtmlReport, AnAttentionCallInsideATrainingStepGetsItsOwnTimeline) {
  // A Llama training step with eager attention (2 layers: 2 forward and 2 backward calls a step).
  const Doctor d(test::data_file("corpus/llama_eager_bf16_train.json.gz"));
  const std::string html = html_report(d.analysis, *d.index);
  const auto bars = bars_per_timeline(html);
  ASSERT_EQ(bars.size(), 2u);
  const GroupStats& g = d.analysis.groups.at(0);
  EXPECT_EQ(bars[0], g.instances[median_instance(g)].kernels + g.instances[median_instance(g)].memcpys +
                         g.instances[median_instance(g)].memsets);
  // The call's timeline shows that first call's kernels: the eager forward (matmul, scale, mask, softmax, matmul).
  EXPECT_LT(bars[1], bars[0]);
  EXPECT_GE(bars[1], 5u);
}

TEST(HtmlReport, SelfContainedSmallAndEscaped) {
  for (const std::string& path : test::real_trace_files()) {
    SCOPED_TRACE(path);
    const Doctor d(path);
    const std::string html = html_report(d.analysis, *d.index);
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("http://"), std::string::npos);
    EXPECT_EQ(html.find("https://"), std::string::npos);
    EXPECT_EQ(html.find(" src="), std::string::npos);
    EXPECT_LT(html.size(), 800u * 1024u);
    // Kernel names are full of < > &: every one escaped, so tags are only ours.
    EXPECT_EQ(html.find("<at::"), std::string::npos);
    EXPECT_EQ(html.find("<float"), std::string::npos);
    EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
    EXPECT_EQ(count(html, "<table"), count(html, "</table>"));
    // Element ids are unique.
    std::map<std::string, int> ids;
    const std::regex id_attr(" id=\"([^\"]+)\"");
    for (auto it = std::sregex_iterator(html.begin(), html.end(), id_attr); it != std::sregex_iterator(); ++it)
      EXPECT_EQ(++ids[(*it)[1].str()], 1) << (*it)[1].str();
  }
}

TEST(AnnotatedTrace, HoldsTheChosenInstancesAndLinksFindings) {
  const Doctor d(test::example_trace("manual.json"));
  const std::string json = annotated_trace(d.analysis, *d.index);
  // Our own reader reads it (full detail: flows kept).
  const Trace t = read_trace_bytes(json, "annotated.json");
  int regions = 0, calls = 0, kernels = 0, copies = 0, sets = 0, finding_spans = 0, flow_starts = 0, flow_ends = 0;
  std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>> lanes;  // tid -> spans
  for (const Event& e : t.events) {
    const std::int64_t pid = e.pid.value();
    if (e.kind == EventKind::Flow) {
      (e.phase == 's' ? flow_starts : flow_ends) += 1;
      continue;
    }
    if (e.phase != 'X') continue;
    if (pid == kAnnotateRegionsPid) (e.tid.value() == 1 ? regions : calls) += 1;
    if (pid == kAnnotateGpuPid) {
      kernels += e.kind == EventKind::Kernel;
      copies += e.kind == EventKind::GpuMemcpy;
      sets += e.kind == EventKind::GpuMemset;
      lanes[e.tid.value()].push_back({e.ts_ns, e.end_ns()});
    }
    if (pid == kAnnotateFindingsPid) ++finding_spans;
  }
  // Three fwd ranges, all chosen (fastest, median, slowest); each a hand-written forward:
  // 5 kernels, a device-to-device copy and a memset; one attention call each.
  EXPECT_EQ(regions, 3);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(kernels, 15);
  EXPECT_EQ(copies, 3);
  EXPECT_EQ(sets, 3);
  EXPECT_GT(finding_spans, 0);
  EXPECT_EQ(flow_starts, finding_spans);
  EXPECT_EQ(flow_ends, finding_spans);
  // No two activities on one lane overlap.
  for (auto& [tid, spans] : lanes) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first) << "lane " << tid;
  }
}

TEST(AnnotatedTrace, FindingTracksCoverTheirKernels) {
  // SDPA math, three fwd ranges of 20 kernels: the finding tracks hold, per forward, all 20 (unfused),
  // the 2 FP32 GEMMs, safe softmax's 4 extra kernels, the 5 casts, the 5 mask kernels.
  const Doctor d(test::example_trace("sdpa_math.json"));
  const Trace t = read_trace_bytes(annotated_trace(d.analysis, *d.index), "annotated.json");
  std::map<std::int64_t, std::string> track;
  std::map<std::string, int> spans;
  for (std::size_t f = 0; f < d.analysis.findings.size(); ++f)
    track[static_cast<std::int64_t>(f) + 1] = d.analysis.findings[f].id;
  for (const Event& e : t.events)
    if (e.phase == 'X' && e.pid.value() == kAnnotateFindingsPid) ++spans[track[e.tid.value()]];
  EXPECT_EQ(spans, (std::map<std::string, int>{{"unfused-attention", 60},
                                               {"cuda-core-gemm", 6},
                                               {"safe-softmax", 12},
                                               {"fp32-upcast", 15},
                                               {"mask-rebuilt", 15}}));
}

TEST(AnnotatedTrace, IsSmallForALongTrainingTrace) {
  // A corpus training program: two profiler steps of a Llama forward, backward and AdamW step.
  const std::string path = test::data_file("corpus/llama_sdpa-flash_bf16_train.json.gz");
  const Doctor d(path);
  const std::string json = annotated_trace(d.analysis, *d.index);
  const Trace t = read_trace_bytes(json, "annotated.json");
  std::set<std::int64_t> pids;
  for (const Event& e : t.events) pids.insert(e.pid.value());
  EXPECT_EQ(pids, (std::set<std::int64_t>{kAnnotateRegionsPid, kAnnotateGpuPid, kAnnotateFindingsPid}));
  std::size_t kernels = 0;
  for (const Event& e : t.events) kernels += e.kind == EventKind::Kernel;
  std::size_t expected = 0;
  for (const GroupStats& g : d.analysis.groups)
    for (const InstanceStats& s : g.instances) expected += static_cast<std::size_t>(s.kernels);
  EXPECT_EQ(kernels, expected);  // two steps: both shown
}

}  // namespace
}  // namespace attnprof
