// attnprof diff end to end: the real binary on the study's traces (SDPA math,
// hand-written, SDPA flash; three fwd ranges each), its outputs, the gate's
// exit codes and bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "run_command.h"
#include "test_paths.h"

namespace attnprof {
namespace {

using test::run_command;

std::string diff(const std::string& args) { return test::attnprof_binary() + " diff " + args; }
std::string pair(const char* before, const char* after) {
  return test::example_trace(before) + " " + test::example_trace(after);
}

TEST(DiffCli, TextNamesTheChange) {
  const auto r = run_command(diff(pair("sdpa_math.json", "sdpa_flash.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("Steps: 3 x 'fwd' -> 3 x 'fwd'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sdpa-math"), std::string::npos);
  EXPECT_NE(r.out.find("fused (FlashAttention)"), std::string::npos);
  EXPECT_NE(r.out.find("fixed     unfused-attention"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fused-attention"), std::string::npos);
  EXPECT_NE(r.out.find("added"), std::string::npos);
  EXPECT_EQ(r.out.find("Gate"), std::string::npos);  // no gate unless asked for
}

TEST(DiffCli, GateExitCodes) {
  const auto fixed = run_command(diff("--fail-on regression " + pair("sdpa_math.json", "sdpa_flash.json")));
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;
  EXPECT_NE(fixed.out.find("Gate (regression:10, on step): pass"), std::string::npos) << fixed.out;
  const auto worse = run_command(diff("--fail-on regression " + pair("manual.json", "sdpa_math.json")));
  EXPECT_EQ(worse.exit_code, 1) << worse.out << worse.err;
  EXPECT_NE(worse.out.find("REGRESSION"), std::string::npos) << worse.out;
  EXPECT_NE(worse.out.find("the median step grew"), std::string::npos) << worse.out;
  const auto on_attention =
      run_command(diff("--fail-on attention-regression " + pair("manual.json", "sdpa_math.json")));
  EXPECT_EQ(on_attention.exit_code, 1) << on_attention.out << on_attention.err;
  EXPECT_NE(on_attention.out.find("attention time per step grew"), std::string::npos) << on_attention.out;
  const auto bad = run_command(diff("--fail-on steps-regression " + pair("manual.json", "sdpa_math.json")));
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  const auto same = run_command(diff("--fail-on regression:0 " + pair("sdpa_flash.json", "sdpa_flash.json")));
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  // Without the gate a regression is reported, not failed on.
  EXPECT_EQ(run_command(diff(pair("manual.json", "sdpa_math.json"))).exit_code, 0);
}

TEST(DiffCli, JsonAndMarkdown) {
  const auto j = run_command(diff("--json --fail-on regression:5 " + pair("manual.json", "sdpa_math.json")));
  EXPECT_EQ(j.exit_code, 1) << j.err;
  EXPECT_EQ(j.out.front(), '{');
  EXPECT_NE(j.out.find("\"schema_version\": 4"), std::string::npos);
  EXPECT_NE(j.out.find("\"metric\": \"step\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"step_span_ms\": "), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"implementation\": \"unfused\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"implementation\": \"sdpa-math\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"regression\": true"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"max_growth_pct\": 5.00"), std::string::npos) << j.out;
  const auto m = run_command(diff("--markdown " + pair("sdpa_math.json", "sdpa_flash.json")));
  EXPECT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.out.find("| forward | sdpa-math | fused (FlashAttention) | 20.0 → 1.0 |"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("Kernel categories added: fused-attention"), std::string::npos) << m.out;
}

TEST(DiffCli, HtmlFile) {
  const auto path = std::filesystem::temp_directory_path() / ("attnprof_diff_" + std::to_string(::getpid()) + ".html");
  const auto r = run_command(diff("--html " + path.string() + " " + pair("sdpa_math.json", "sdpa_flash.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = test::slurp(path);
  std::filesystem::remove(path);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("fused (FlashAttention)"), std::string::npos);
  EXPECT_NE(page.find("<td>fixed</td><td><code>unfused-attention</code>"), std::string::npos);
}

TEST(DiffCli, BadInputIsOneLineAndExitTwo) {
  const std::string good = test::example_trace("sdpa_math.json");
  for (const std::string& args :
       {"--fail-on regresion " + good + " " + good, "--fail-on regression:-3 " + good + " " + good,
        "--fail-on regression:x " + good + " " + good, good + " /nonexistent/after.json", std::string("- -"), good,
        "--json --markdown " + good + " " + good}) {
    const auto r = run_command(diff(args));
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_TRUE(r.out.empty()) << args;
    ASSERT_FALSE(r.err.empty()) << args;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1 -
                                    (r.err.find("run 'attnprof diff --help'") != std::string::npos
                                         ? std::string("run 'attnprof diff --help' for usage\n").size()
                                         : 0))
        << args << ": " << r.err;
  }
  const auto missing = run_command(diff(good + " /nonexistent/after.json"));
  EXPECT_NE(missing.err.find("/nonexistent/after.json"), std::string::npos) << missing.err;
  const auto pct = run_command(diff("--fail-on regression:x " + good + " " + good));
  EXPECT_NE(pct.err.find("--fail-on regression:x: expected"), std::string::npos) << pct.err;
}

}  // namespace
}  // namespace attnprof
