// doctor --fail-on's gate (finding_gate.h): what each kind of item catches, on a list of
// findings and on an analysis alike.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/finding_gate.h"
#include "common/input_error.h"

namespace attnprof {
namespace {

std::vector<Finding> three_findings() {
  std::vector<Finding> fs(3);
  fs[0].id = "fp32-upcast";
  fs[0].severity = Severity::Low;
  fs[1].id = "unfused-attention";
  fs[1].scope = Scope::Attention;
  fs[1].severity = Severity::High;
  fs[2].id = "gpu-idle";
  fs[2].severity = Severity::Medium;
  return fs;
}

std::vector<std::string> ids(const std::vector<const Finding*>& caught) {
  std::vector<std::string> out;
  for (const Finding* f : caught) out.push_back(f->id);
  return out;
}

TEST(FindingGate, CatchesByIdScopeSeverityOrAny) {
  const std::vector<Finding> fs = three_findings();
  using Ids = std::vector<std::string>;
  EXPECT_EQ(ids(caught_by(fs, parse_finding_gate({"gpu-idle"}))), Ids{"gpu-idle"});
  EXPECT_EQ(ids(caught_by(fs, parse_finding_gate({"attention"}))), Ids{"unfused-attention"});
  EXPECT_EQ(ids(caught_by(fs, parse_finding_gate({"model"}))), (Ids{"fp32-upcast", "gpu-idle"}));
  EXPECT_EQ(ids(caught_by(fs, parse_finding_gate({"medium"}))), (Ids{"unfused-attention", "gpu-idle"}));
  EXPECT_EQ(ids(caught_by(fs, parse_finding_gate({"high", "fp32-upcast"}))), (Ids{"fp32-upcast", "unfused-attention"}));
  EXPECT_EQ(ids(caught_by(fs, parse_finding_gate({"any"}))), (Ids{"fp32-upcast", "unfused-attention", "gpu-idle"}));
  EXPECT_THROW(parse_finding_gate({"atention"}), InputError);
}

TEST(FindingGate, AnAnalysisIsItsFindings) {
  Analysis a;
  a.findings = three_findings();
  for (const char* item : {"attention", "model", "low", "any", "gpu-idle"}) {
    const FindingGate g = parse_finding_gate({item});
    EXPECT_EQ(ids(caught_by(a, g)), ids(caught_by(a.findings, g))) << item;
  }
}

}  // namespace
}  // namespace attnprof
