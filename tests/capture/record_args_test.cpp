// attnprof record's argument handling: validation, the environment given to
// the program, exit codes passed through (with programs that need no GPU).
#include "cli/record_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "trace/trace_error.h"

namespace attnprof::cli {
namespace {

RecordOptions with_command(std::vector<std::string> cmd) {
  RecordOptions o;
  o.output = (std::filesystem::temp_directory_path() / "attnprof_record_test.json").string();
  o.command = std::move(cmd);
  return o;
}

TEST(RecordArgs, RequiresAProgram) {
  EXPECT_THROW(validate_record_options(with_command({})), InputError);
}

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
  EXPECT_EQ(run_with_environment({"sh", "-c", "test \"$X\" = 1 && test -n \"$ATTNPROF_RECORD_PID\""},
                                 {{"X", "1"}}),
            0);
  EXPECT_EQ(run_with_environment({"sh", "-c", "kill -TERM $$"}, {}), 128 + 15);
  EXPECT_EQ(run_with_environment({"/no/such/program"}, {}), 127);
}

TEST(RecordArgs, ParsesOptionsAndPassesTheProgramsOwnOptionsThrough) {
  // Through the real CLI: the child's "-o" and "--doctor" after "--" are its own.
  setenv("ATTNPROF_INJECT_LIBRARY", "/bin/true", 1);  // any file: sh never starts CUDA
  CLI::App app;
  int exit_code = -1;
  add_record_command(app, exit_code);
  const auto out = (std::filesystem::temp_directory_path() / "attnprof_args.json").string();
  std::vector<std::string> args = {"record", "--kinds", "kernel", "-o", out, "--", "sh", "-c",
                                   "test \"$0\" = -o && test \"$1\" = --doctor && exit 5", "-o",
                                   "--doctor"};
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last-first
  app.parse(args);
  unsetenv("ATTNPROF_INJECT_LIBRARY");
  EXPECT_EQ(exit_code, 5);
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
