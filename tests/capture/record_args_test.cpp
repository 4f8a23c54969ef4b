// attnprof record's argument handling: validation, the environment given to
// the program, exit codes passed through (with programs that need no GPU).
#include "cli/record_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <CLI/CLI.hpp>

#include "capture/record_kinds.h"
#include "cli/commands.h"
#include "cli/cuda_probe.h"
#include "common/input_error.h"

namespace attnprof::cli {
namespace {

RecordOptions with_command(std::vector<std::string> cmd) {
  RecordOptions o;
  o.output = (std::filesystem::temp_directory_path() / "attnprof_record_test.json").string();
  o.command = std::move(cmd);
  return o;
}

TEST(RecordArgs, CuptiAttributesParse) {
  const auto a = capture::parse_cupti_attributes("per_thread_buffers=0,host_pinned=1,device_buffer_mb=16");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->per_thread_buffers, false);
  EXPECT_EQ(a->host_pinned, true);
  EXPECT_EQ(a->device_buffer_mb, 16u);
  const auto none = capture::parse_cupti_attributes("");
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->per_thread_buffers || none->host_pinned || none->device_buffer_mb);
  for (const char* bad : {"per_thread_buffers=2", "host_pinned", "device_buffer_mb=0", "device_buffer_mb=99999",
                          "device_buffer_mb=1x", "zeroed=1"}) {
    std::string item;
    EXPECT_FALSE(capture::parse_cupti_attributes(std::string("host_pinned=0,") + bad, &item).has_value()) << bad;
    EXPECT_EQ(item, bad);
  }
}

TEST(RecordArgs, RequiresAProgram) { EXPECT_THROW(validate_record_options(with_command({})), InputError); }

TEST(RecordArgs, OutputMustBeJsonInAnExistingFolder) {
  auto o = with_command({"true"});
  EXPECT_NO_THROW(validate_record_options(o));
  o.output = "trace.json.gz";
  EXPECT_NO_THROW(validate_record_options(o));
  o.output = "trace.txt";
  EXPECT_THROW(validate_record_options(o), InputError);
  o.output = "/no/such/folder/trace.json";
  try {
    validate_record_options(o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/folder"), std::string::npos);
  }
}

TEST(RecordArgs, KindsAreChecked) {
  auto o = with_command({"true"});
  o.kinds = "kernel,nvtx";
  EXPECT_NO_THROW(validate_record_options(o));
  o.kinds = "kernel,bogus";
  try {
    validate_record_options(o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'bogus'"), std::string::npos);
  }
  o.kinds = ",";
  EXPECT_THROW(validate_record_options(o), InputError);
}

TEST(RecordArgs, CallTracingIsCheckedAndPassedOn) {
  auto o = with_command({"true"});
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : record_environment(o, "/lib.so")) env[k] = v;
  EXPECT_EQ(env["ATTNPROF_RECORD_CALLS"], "callbacks");  // the default
  o.calls = "activity";
  EXPECT_NO_THROW(validate_record_options(o));
  for (const auto& [k, v] : record_environment(o, "/lib.so")) env[k] = v;
  EXPECT_EQ(env["ATTNPROF_RECORD_CALLS"], "activity");
  o.calls = "records";
  try {
    validate_record_options(o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "record: --calls records: expected callbacks or activity");
  }
}

TEST(RecordArgs, CaptureWindowIsChecked) {
  auto o = with_command({"python3", "x.py"});
  o.delay = 2.5;
  o.duration = 10;
  EXPECT_NO_THROW(validate_record_options(o));
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : record_environment(o, "/lib.so")) env[k] = v;
  EXPECT_EQ(env["ATTNPROF_RECORD_DELAY"], "2.5");
  EXPECT_EQ(env["ATTNPROF_RECORD_DURATION"], "10");
  for (const double bad : {-1.0, 2e6, std::nan("")}) {
    o.duration = bad;
    try {
      validate_record_options(o);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("record: --duration"), std::string::npos) << e.what();
    }
  }
}

TEST(RecordArgs, CaptureRangeAndSteps) {
  auto o = with_command({"python3", "train.py"});
  o.capture_range = "nvtx:step";
  o.steps = "100:109";
  CaptureWindow w = capture_window(o);
  EXPECT_EQ(w.range, "step");
  EXPECT_EQ(w.first, 100);
  EXPECT_EQ(w.count, 10);
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : record_environment(o, "/lib.so")) env[k] = v;
  EXPECT_EQ(env["ATTNPROF_RECORD_CAPTURE_RANGE"], "step");
  EXPECT_EQ(env["ATTNPROF_RECORD_CAPTURE_FIRST"], "100");
  EXPECT_EQ(env["ATTNPROF_RECORD_CAPTURE_COUNT"], "10");
  o.steps.clear();
  o.capture_count = 3;
  w = capture_window(o);
  EXPECT_EQ(w.first, 0);
  EXPECT_EQ(w.count, 3);
  EXPECT_EQ(capture_window(with_command({"x"})).range, "");  // none asked: no window
  const auto refused = [](RecordOptions bad, const std::string& message) {
    try {
      validate_record_options(bad);
      ADD_FAILURE() << message;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  auto bad = with_command({"x"});
  bad.capture_range = "step";
  refused(bad, "--capture-range step: expected nvtx:NAME");
  bad.capture_range = "nvtx:";
  refused(bad, "expected nvtx:NAME");
  bad.capture_range = "nvtx:step";
  bad.steps = "9:3";
  refused(bad, "--steps 9:3: TO is before FROM");
  bad.steps = "3";
  refused(bad, "--steps 3: expected FROM:TO");
  bad.steps = "a:b";
  refused(bad, "expected FROM:TO");
  bad.steps = "1:2";
  bad.capture_count = 2;
  refused(bad, "--steps and --capture-count");
  bad.steps.clear();
  bad.capture_count = 0;
  bad.delay = 5;
  refused(bad, "one capture window at a time");
  auto lone = with_command({"x"});
  lone.steps = "1:2";
  refused(lone, "--steps needs --capture-range");
  lone.steps.clear();
  lone.capture_count = 2;
  refused(lone, "--capture-count needs --capture-range");
  auto negative = with_command({"x"});
  negative.capture_range = "nvtx:s";
  negative.capture_count = -1;
  refused(negative, "--capture-count -1: at least 1");
}

TEST(RecordArgs, EnvironmentNamesTheLibraryAndAnAbsoluteOutput) {
  auto o = with_command({"python3", "x.py"});
  o.output = "rel/t.json.gz";
  o.kinds = "kernel";
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : record_environment(o, "/opt/lib/libattnprof_inject.so")) env[k] = v;
  EXPECT_EQ(env["CUDA_INJECTION64_PATH"], "/opt/lib/libattnprof_inject.so");
  EXPECT_EQ(env["NVTX_INJECTION64_PATH"], "/opt/lib/libattnprof_inject.so");
  EXPECT_EQ(env["ATTNPROF_RECORD_KINDS"], "kernel");
  EXPECT_TRUE(std::filesystem::path(env["ATTNPROF_RECORD_OUTPUT"]).is_absolute());
  EXPECT_TRUE(env["ATTNPROF_RECORD_OUTPUT"].ends_with("rel/t.json.gz"));
}

TEST(RecordArgs, ChildExitCodeAndEnvironmentPassThrough) {
  EXPECT_EQ(run_with_environment({"sh", "-c", "exit 3"}, {}), 3);
  EXPECT_EQ(run_with_environment({"sh", "-c", "test \"$X\" = 1 && test -n \"$ATTNPROF_RECORD_PID\""}, {{"X", "1"}}), 0);
  EXPECT_EQ(run_with_environment({"sh", "-c", "kill -TERM $$"}, {}), 128 + 15);
  EXPECT_EQ(run_with_environment({"/no/such/program"}, {}), 127);
}

TEST(RecordArgs, ParsesOptionsAndPassesTheProgramsOwnOptionsThrough) {
  // Through the real CLI: the child's "-o" and "--doctor" after "--" are its own.
  setenv("ATTNPROF_INJECT_LIBRARY", "/bin/true", 1);  // any file: sh never starts CUDA
  setenv("ATTNPROF_RECORD_NO_GPU_CHECK", "1", 1);     // this test needs no GPU
  CLI::App app;
  int exit_code = -1;
  add_record_command(app, exit_code);
  const auto out = (std::filesystem::temp_directory_path() / "attnprof_args.json").string();
  std::vector<std::string> args = {"record", "--kinds", "kernel",
                                   "-o",     out,       "--",
                                   "sh",     "-c",      "test \"$0\" = -o && test \"$1\" = --doctor && exit 5",
                                   "-o",     "--doctor"};
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last-first
  app.parse(args);
  unsetenv("ATTNPROF_INJECT_LIBRARY");
  unsetenv("ATTNPROF_RECORD_NO_GPU_CHECK");
  EXPECT_EQ(exit_code, 5);
}

// Without a driver (this machine, CI), record says so in those words and starts nothing
// ("no trace written ... see above" pointed at nothing). With a GPU the check passes.
TEST(RecordArgs, NoDriverOrGpuIsSaidFirst) {
  const std::string problem = cuda_device_problem();
  if (problem.empty()) GTEST_SKIP() << "this machine has an NVIDIA driver and GPU";
  EXPECT_TRUE(problem.starts_with("no NVIDIA driver found") || problem.starts_with("no NVIDIA GPU") ||
              problem.starts_with("the NVIDIA driver found no usable GPU"))
      << problem;
  setenv("ATTNPROF_INJECT_LIBRARY", "/bin/true", 1);
  RecordOptions options;
  options.output = (std::filesystem::temp_directory_path() / "attnprof_nogpu.json").string();
  options.command = {"sh", "-c", "touch " + options.output + ".ran"};
  try {
    run_record(options);
    ADD_FAILURE() << "record ran without a GPU";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nothing to record, sh was not started"), std::string::npos) << e.what();
  }
  unsetenv("ATTNPROF_INJECT_LIBRARY");
  EXPECT_FALSE(std::filesystem::exists(options.output + ".ran"));
}

// A program that makes no CUDA call: the message says exactly that.
TEST(RecordArgs, NoCudaCallIsSaidAsSuch) {
  setenv("ATTNPROF_INJECT_LIBRARY", "/bin/true", 1);
  setenv("ATTNPROF_RECORD_NO_GPU_CHECK", "1", 1);
  RecordOptions options;
  options.output = (std::filesystem::temp_directory_path() / "attnprof_nocuda.json").string();
  options.command = {"sh", "-c", "exit 0"};
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_record(options), 0);
  const std::string err = testing::internal::GetCapturedStderr();
  unsetenv("ATTNPROF_INJECT_LIBRARY");
  unsetenv("ATTNPROF_RECORD_NO_GPU_CHECK");
  EXPECT_NE(err.find("the program made no CUDA call, so the recorder never started"), std::string::npos) << err;
  EXPECT_EQ(err.find("see above"), std::string::npos) << err;
}

TEST(RecordArgs, MissingInjectLibraryIsAnInputError) {
  unsetenv("ATTNPROF_INJECT_LIBRARY");
  EXPECT_THROW(find_inject_library(), InputError);  // none next to the test binary
  setenv("ATTNPROF_INJECT_LIBRARY", "/no/such/lib.so", 1);
  EXPECT_THROW(find_inject_library(), InputError);
  unsetenv("ATTNPROF_INJECT_LIBRARY");
}

}  // namespace
}  // namespace attnprof::cli
