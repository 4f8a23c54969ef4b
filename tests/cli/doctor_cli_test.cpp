// attnprof doctor end to end: the real binary on real traces and on bad input.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "run_command.h"
#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

namespace fs = std::filesystem;
using test::run_command;

std::string doctor(const std::string& args) { return test::attnprof_binary() + " doctor " + args; }

TEST(DoctorCli, SdpaMath) {
  const auto r = run_command(doctor(test::example_trace("sdpa_math.json")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("per fwd                       20"), std::string::npos) << r.out;
  for (const char* id : {"cuda-core-gemm", "fp32-upcast", "mask-rebuilt", "safe-softmax", "unfused-attention"})
    EXPECT_NE(r.out.find(id), std::string::npos) << id;
}

TEST(DoctorCli, JsonIsReadableByOurOwnReader) {
  const auto r = run_command(doctor("--json " + test::example_trace("manual.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"id\": \"hidden-copy\""), std::string::npos);
  EXPECT_EQ(r.out.find("\"id\": \"cuda-core-gemm\""), std::string::npos);
}

TEST(DoctorCli, RegionOption) {
  // The user's name, as given (fwd2 was reported as 'fwd').
  const auto r = run_command(doctor("--region fwd2 " + test::example_trace("sdpa_math.json")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Region 'fwd2': 1 instance"), std::string::npos) << r.out;
  const auto stem = run_command(doctor("--region fwd " + test::example_trace("sdpa_math.json")));
  EXPECT_NE(stem.out.find("Region 'fwd': 3 instances"), std::string::npos) << stem.out;
  const auto missing = run_command(doctor("--region nope " + test::example_trace("sdpa_math.json")));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no range named 'nope'"), std::string::npos) << missing.err;
}

TEST(DoctorCli, GzipTraces) {
  const auto r = run_command(doctor(test::data_file("trace_diff__control__control.json.gz")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Region 'ProfilerStep': 6 instances"), std::string::npos);
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("attnprof_bad_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  // Exit code 2, one line on stderr naming the file, nothing on stdout.
  void expect_refused(const std::string& path, const std::string& what) {
    const auto r = run_command(doctor(path));
    EXPECT_EQ(r.exit_code, 2) << path;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  }
  fs::path dir_;
};

TEST_F(BadInput, EveryKindIsRefusedCleanly) {
  expect_refused(write("empty.json", ""), "file is empty");
  expect_refused(write("text.json", "this is not json"), "not a JSON trace");
  expect_refused(write("noevents.json", R"({"schemaVersion": 1})"), "no \"traceEvents\"");
  expect_refused(write("types.json", R"({"traceEvents": [{"ph": "X", "ts": "x"}]})"), "expected a number");
  expect_refused(write("bad.json.gz", std::string("\x1f\x8b\x08\x00garbage-garbage", 19)), "gzip");
  std::ifstream in(test::example_trace("sdpa_math.json"), std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), {});
  expect_refused(write("cut.json", whole.substr(0, whole.size() * 2 / 3)), "truncated");
  expect_refused((dir_ / "missing.json").string(), "cannot open");
  // A folder is the ranks of one job: every bad trace in it named on stderr, exit 2.
  const auto folder = run_command(doctor(dir_.string()));
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_NE(folder.err.find("empty.json: "), std::string::npos) << folder.err;
  EXPECT_NE(folder.err.find("bad.json.gz: "), std::string::npos) << folder.err;
  const fs::path none = dir_ / "none";
  fs::create_directories(none);
  expect_refused(none.string(), "a folder with no traces in it");
}

// doctor DIR: the ranks of one job in one report; a bad rank trace is named, the others analysed
// (exit 2), no input changes; options that write one trace's files are refused for many.
TEST_F(BadInput, ManyRanks) {
  const fs::path job = dir_ / "job";
  fs::create_directories(job);
  for (int r : {0, 1})
    fs::copy_file(test::data_file("steps/idle_comm_rank" + std::to_string(r) + ".json.gz"),
                  job / ("idle_comm_rank" + std::to_string(r) + ".json.gz"));
  const auto good = run_command(doctor(job.string()));
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("2 traces of one job (world size 2, gloo)"), std::string::npos) << good.out;
  EXPECT_NE(good.out.find("   0 "), std::string::npos) << good.out;
  EXPECT_NE(good.out.find("   1 "), std::string::npos) << good.out;
  const auto json = run_command(doctor("--json -j 1 " + job.string()));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"kind\": \"ranks\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"cross_rank\""), std::string::npos) << json.out;
  const std::string before = test::slurp(job / "idle_comm_rank0.json.gz");
  std::ofstream(job / "idle_comm_rank2.json", std::ios::binary) << R"({"traceEvents": [{"ph": "X", )";
  const auto bad = run_command(doctor(job.string()));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("idle_comm_rank2.json: "), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("1 trace could not be read"), std::string::npos) << bad.out;
  EXPECT_NE(bad.err.find("idle_comm_rank2.json: "), std::string::npos) << bad.err;
  EXPECT_EQ(test::slurp(job / "idle_comm_rank0.json.gz"), before);
  // A folder where the traces' names state their ranks: the other files (facts.json) are left out.
  const auto data = run_command(doctor(fs::path(test::data_file("ranks/facts.json")).parent_path().string()));
  EXPECT_EQ(data.exit_code, 0) << data.err;
  EXPECT_NE(data.out.find("4 traces of one job (world size 4, gloo)"), std::string::npos) << data.out;
  // --html across ranks: the page is written, the bad rank named in it, and the exit code still says so.
  const auto html = run_command(doctor("--html " + (dir_ / "r.html").string() + " " + job.string()));
  EXPECT_EQ(html.exit_code, 2);
  EXPECT_NE(test::slurp(dir_ / "r.html").find("idle_comm_rank2.json: "), std::string::npos);
  const auto annotate = run_command(doctor("--annotate " + (dir_ / "a.json").string() + " " + job.string()));
  EXPECT_EQ(annotate.exit_code, 2);
  EXPECT_NE(annotate.err.find("--annotate reads one trace"), std::string::npos) << annotate.err;
  EXPECT_FALSE(fs::exists(dir_ / "a.json"));
}

TEST(DoctorCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_command(test::attnprof_binary() + " doctor").exit_code, 2);
  EXPECT_EQ(run_command(test::attnprof_binary() + " frobnicate").exit_code, 2);
  EXPECT_EQ(run_command(test::attnprof_binary()).exit_code, 2);
  EXPECT_EQ(run_command(doctor("--bogus " + test::example_trace("sdpa_math.json"))).exit_code, 2);
  const auto version = run_command(test::attnprof_binary() + " --version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("attnprof ", 0), 0u) << version.out;
  const auto help = run_command(test::attnprof_binary() + " doctor --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--region"), std::string::npos);
  // Every finding id, and what the columns mean.
  for (const char* id :
       {"cuda-core-gemm", "fp32-upcast", "mask-rebuilt", "safe-softmax", "unfused-attention", "hidden-copy"})
    EXPECT_NE(help.out.find(id), std::string::npos) << id;
  EXPECT_NE(help.out.find("idle = span - busy"), std::string::npos);
}

TEST(DoctorCli, MistypedCommandGetsASuggestion) {
  const auto r = run_command(test::attnprof_binary() + " doctr x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'doctr'; did you mean 'doctor'?"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A bare call prints the usage (exit 2); -V is --version; a mistyped option or value is answered with
// the closest one and its command's own help; the usage names the program attnprof however it starts.
TEST(DoctorCli, TheCliHelpsWithMistakes) {
  const std::string bin = test::attnprof_binary();
  const auto bare = run_command(bin);
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("Usage: attnprof [OPTIONS] SUBCOMMAND"), std::string::npos) << bare.err;
  EXPECT_NE(bare.err.find("doctor"), std::string::npos) << bare.err;
  const auto v = run_command(bin + " -V");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.out, run_command(bin + " --version").out);
  const std::string trace = test::example_trace("manual.json");
  const auto option = run_command(doctor("--regoin fwd " + trace));
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_NE(option.err.find("did you mean '--region'?"), std::string::npos) << option.err;
  EXPECT_NE(option.err.find("run 'attnprof doctor --help'"), std::string::npos) << option.err;
  const auto value = run_command(doctor("--fail-on atention " + trace));
  EXPECT_EQ(value.exit_code, 2);
  EXPECT_NE(value.err.find("did you mean 'attention'?"), std::string::npos) << value.err;
  const auto gate = run_command(bin + " diff --fail-on regresion " + trace + " " + trace);
  EXPECT_EQ(gate.exit_code, 2);
  EXPECT_NE(gate.err.find("did you mean 'regression'?"), std::string::npos) << gate.err;
  const auto help = run_command(bin + " diff --help");
  EXPECT_NE(help.out.find("Usage: attnprof diff"), std::string::npos) << help.out;
}

// The completion scripts list every command and each command's options, from the CLI itself.
TEST(DoctorCli, ShellCompletion) {
  const std::string bin = test::attnprof_binary();
  for (const char* shell : {"bash", "zsh"}) {
    const auto r = run_command(bin + " completion " + shell);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("complete -o filenames -F _attnprof attnprof"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("doctor) opts=\"--help -h --region"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--fail-on"), std::string::npos);
  }
  const auto fish = run_command(bin + " completion fish");
  EXPECT_EQ(fish.exit_code, 2);
  EXPECT_NE(fish.err.find("completion fish: the shells are bash and zsh"), std::string::npos) << fish.err;
}

// The study's programs run one attention per profiled forward ("fwd" regions): the singular; the
// corpus's Llama inference runs 2 layers per forward: the plural.
TEST(DoctorCli, AttentionLineCountsCallsInWords) {
  const auto one = run_command(doctor(test::example_trace("manual.json")));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find(" of GPU time) in 1 call (unfused forward)"), std::string::npos) << one.out;
  const auto two = run_command(doctor(test::data_file("corpus/llama_sdpa-math_bf16_infer.json.gz")));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.out.find(" of GPU time) in 2 calls ("), std::string::npos) << two.out;
}

// Several traces are the ranks of one job: traces of other programs (steps of another region) are
// refused in one line.
TEST(DoctorCli, ManyTracesAreOneJob) {
  const auto r = run_command(
      doctor(test::example_trace("sdpa_math.json") + " " + test::data_file("steps/idle_gpu-bound.json.gz")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("steps by 'fwd'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not the traces of one job"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(DoctorCli, DashReadsStandardInput) {
  const auto r = run_command("(gzip -c " + test::example_trace("sdpa_math.json") + " | " + doctor("--json -") + ")");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"trace\": \"<stdin>\""), std::string::npos) << r.out.substr(0, 200);
  EXPECT_NE(r.out.find("\"implementation\": \"sdpa-math\""), std::string::npos);
  const auto empty = run_command(doctor("- < /dev/null"));
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("<stdin>: empty input"), std::string::npos) << empty.err;
}

// The report fits a 100-column terminal, on every real trace (it was 150 wide).
TEST(DoctorCli, ReportFitsOneHundredColumns) {
  for (const std::string& path : test::real_trace_files()) {
    const auto r = run_command(doctor(path));
    ASSERT_EQ(r.exit_code, 0) << path << ": " << r.err;
    std::size_t line = 0, longest = 0;
    for (std::size_t at = 0; at < r.out.size();) {
      const std::size_t nl = r.out.find('\n', at);
      const std::size_t len = (nl == std::string::npos ? r.out.size() : nl) - at;
      if (line++ > 0) longest = std::max(longest, len);  // the first line is the path as given
      at = nl == std::string::npos ? r.out.size() : nl + 1;
    }
    EXPECT_LE(longest, 100u) << path;
  }
}

}  // namespace
}  // namespace attnprof

namespace attnprof {
namespace {

// Without a GPU, bench says so in plain words ("CUDA driver version is
// insufficient" before), shows the header first, and skips what needs a GPU.
TEST(BenchCli, NoGpuSaidPlainly) {
  const auto r = test::run_command(test::attnprof_binary() +
                                   " bench --batch 1 --heads 2 --seq 64 --repeats 1 --impl math,manual,cudnn,fused");
  if (r.exit_code == 2 && r.err.find("no such implementation") != std::string::npos)
    GTEST_SKIP() << "built without CUDA: " << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("attnprof bench: ", 0), 0u) << r.out;
  if (r.out.find("on cpu") == std::string::npos) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_NE(r.out.find("no NVIDIA"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("insufficient"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cudnn              skipped: needs an NVIDIA GPU"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("n/a"), std::string::npos) << "no GPU-only columns on a CPU run:\n" << r.out;
}

}  // namespace
}  // namespace attnprof

namespace attnprof {
namespace {

// --html and --annotate write their file whole, beside the usual report; a path
// that cannot be written is a one-line error before anything is printed.
TEST_F(BadInput, HtmlAndAnnotateFiles) {
  const std::string html = (dir_ / "report.html").string(), ann = (dir_ / "annotated.json").string();
  const auto r =
      run_command(doctor("--html " + html + " --annotate " + ann + " " + test::example_trace("sdpa_math.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unfused-attention"), std::string::npos);  // the text report as ever
  const std::string page = test::slurp(html);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  const Trace t = read_trace_file(ann);
  EXPECT_GT(t.events.size(), 60u);  // three fwd instances of 20 kernels, and more
  for (const std::string& bad : {std::string("/nonexistent-dir/r.html"), dir_.string()}) {
    const auto refused = run_command(doctor("--html " + bad + " " + test::example_trace("sdpa_math.json")));
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_TRUE(refused.out.empty()) << refused.out;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    EXPECT_NE(refused.err.find(bad + ": cannot write"), std::string::npos) << refused.err;
  }
  // Nothing half-written left behind.
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace attnprof

namespace attnprof {
namespace {

// bench --from-trace on real programs: the shape each was built with (facts.json); without a GPU,
// the command to run where there is one.
TEST(BenchCli, FromTraceNamesTheProgramsShape) {
  const std::string trace = test::data_file("corpus/llama_sdpa-math_bf16_infer.json.gz");
  const auto r = test::run_command(test::attnprof_binary() + " bench --from-trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Llama, 2 layers x 2 profiled forwards, B=2, 8 query heads over 2 kv heads, S=512, D=64, causal.
  EXPECT_NE(r.out.find("Shape 1 of 1 in " + trace +
                       ": B=2 H=8 H_kv=2 S=512 S_kv=512 D=64 bf16 causal: 4 forward "
                       "calls (sdpa-math)"),
            std::string::npos)
      << r.out;
  if (r.out.find("run this on a machine with one") == std::string::npos) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_NE(r.out.find("attnprof bench --timing hot --batch 2 --heads 8 --kv-heads 2 --seq 512 --kv-seq 512 "
                       "--head-dim 64 --dtype bf16\n"),
            std::string::npos)
      << r.out;
  const auto j = test::run_command(test::attnprof_binary() + " bench --json --from-trace " + trace);
  EXPECT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"calls\": 4"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"bench\": null"), std::string::npos) << j.out;
}

// doctor --replay: the plan on every machine; without a GPU the bench command per shape, every row
// saying why it did not run; the JSON and HTML carry the same.
TEST(DoctorCli, ReplayWithoutAGpuPrintsTheCommands) {
  // Llama on SDPA math: B=2, 8 query heads over 2 kv heads, S=512, D=64, causal, bf16 (facts.json).
  const std::string trace = test::data_file("corpus/llama_sdpa-math_bf16_infer.json.gz");
  const auto r = run_command(doctor("--replay " + trace));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Shape 1 of 1: B=2 H=8 H_kv=2 S=512 S_kv=512 D=64 bf16 causal: 4 forward calls (sdpa-math)"),
            std::string::npos)
      << r.out;
  if (r.out.find("Not run: ") == std::string::npos) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_NE(r.out.find("attnprof bench --timing hot --batch 2 --heads 8 --kv-heads 2 --seq 512 --kv-seq 512 "
                       "--head-dim 64 --dtype bf16 --impl math,cudnn,fused"),
            std::string::npos)
      << r.out;
  const auto j = run_command(doctor("--replay --json " + trace));
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"replay\": {"), std::string::npos);
  EXPECT_NE(j.out.find("\"not_run\": \"no GPU here\""), std::string::npos);
  const fs::path html = fs::temp_directory_path() / "attnprof_replay_test.html";
  const auto h = run_command(doctor("--replay --html " + html.string() + " " + trace));
  ASSERT_EQ(h.exit_code, 0) << h.err;
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("<section id=\"replay\">"), std::string::npos);
  EXPECT_NE(page.find("--impl math,cudnn,fused"), std::string::npos);
  fs::remove(html);
}

TEST(DoctorCli, ReplayShapeOption) {
  const std::string record = test::data_file("corpus/gpt2_eager_bf16_infer_record.json.gz");
  // No record_shapes: asked for, with what the kernels say (GPT-2: B=2 x H=8 x S=512 rows of 512 keys).
  const auto ask = run_command(doctor("--replay " + record));
  ASSERT_EQ(ask.exit_code, 0) << ask.err;
  EXPECT_NE(ask.out.find("give it as --shape B,H[/H_KV],S[/S_KV],D"), std::string::npos) << ask.out;
  const auto given = run_command(doctor("--replay --causal --shape 2,8,512,64 " + record));
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_NE(given.out.find("B=2 H=8 H_kv=8 S=512 S_kv=512 D=64 bf16 causal: 6 forward calls (unfused)"),
            std::string::npos)
      << given.out;
  EXPECT_NE(given.out.find("it agrees with the kernels' launches"), std::string::npos) << given.out;
  const auto wrong = run_command(doctor("--replay --shape 2,8,1024,64 " + record));
  EXPECT_NE(wrong.out.find("it DISAGREES with the kernels' launches"), std::string::npos) << wrong.out;
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--replay --shape 2,8,512 ", "--shape '2,8,512': 3 fields, not 4"},
           {"--replay --shape 2,8/3,512,64 ", "3 kv heads do not divide 8 query heads"},
           {"--replay --shape 2,x,512,64 ", "'x' is not a positive integer"},
           {"--replay --shape 2,8,0,64 ", "'0' is not a positive integer"},
           {"--shape 2,8,512,64 ", "--shape is for --replay"},
           {"--causal ", "--causal/--no-causal is for --replay"}}) {
    const auto r = run_command(doctor(args + record));
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(BenchCli, FromTraceRefusals) {
  const auto both = test::run_command(test::attnprof_binary() + " bench --seq 64 --from-trace " +
                                      test::example_trace("sdpa_math.json"));
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--from-trace takes the shapes from the trace: leave out --seq"), std::string::npos)
      << both.err;
  // attnprof record traces have no CPU ops, so no shapes.
  const auto none = test::run_command(test::attnprof_binary() + " bench --from-trace " +
                                      test::data_file("corpus/gpt2_eager_bf16_infer_record.json.gz"));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("none of its 6 forward attention calls has a shape"), std::string::npos) << none.err;
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;
}

// An output never overwrites a trace: --annotate onto the input, --html onto a trace's name (two traces
// meant), are refused with one line and exit 2, and the input is left as it was.
TEST(DoctorCli, OutputsNeverOverwriteATrace) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("attnprof_outputs_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path trace = dir / "a.json";
  fs::copy_file(test::example_trace("manual.json"), trace, fs::copy_options::overwrite_existing);
  const std::string before = test::slurp(trace);
  const auto same = run_command(doctor("--annotate " + trace.string() + " " + trace.string()));
  EXPECT_EQ(same.exit_code, 2) << same.out << same.err;
  EXPECT_NE(same.err.find("would overwrite the trace"), std::string::npos) << same.err;
  const fs::path gz = dir / "b.json.gz";
  const auto page = run_command(doctor("--html " + gz.string() + " " + trace.string()));
  EXPECT_EQ(page.exit_code, 2) << page.out << page.err;
  EXPECT_NE(page.err.find("an HTML page, not a trace"), std::string::npos) << page.err;
  EXPECT_FALSE(fs::exists(gz));
  EXPECT_EQ(test::slurp(trace), before);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnprof
