// attnprof record [-o trace.json[.gz]] [--kinds ...] [--doctor] -- CMD ARGS...
// Runs CMD with libattnprof_inject.so as its CUDA and NVTX injection library;
// the library writes the trace when the program ends (see src/capture/inject.cpp).
#include "cli/record_command.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <fmt/core.h>

#include "capture/record_kinds.h"
#include "capture/trace_names.h"
#include "cli/commands.h"
#include "cli/cuda_probe.h"
#include "common/input_error.h"
#include "report/format.h"

namespace attnprof::cli {
namespace fs = std::filesystem;

namespace {
constexpr const char* kInjectLibrary = "libattnprof_inject.so";

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

CaptureWindow capture_window(const RecordOptions& o) {
  CaptureWindow w;
  if (o.capture_range.empty()) {
    if (o.capture_count != 0) throw InputError("record: --capture-count needs --capture-range nvtx:NAME");
    if (!o.steps.empty()) throw InputError("record: --steps needs --capture-range nvtx:NAME (the step's range)");
    return w;
  }
  if (!o.capture_range.starts_with("nvtx:") || o.capture_range.size() == 5)
    throw InputError(
        fmt::format("record: --capture-range {}: expected nvtx:NAME (an NVTX range's name)", o.capture_range));
  if (o.delay > 0 || o.duration > 0)
    throw InputError("record: --capture-range and --delay/--duration: one capture window at a time");
  w.range = o.capture_range.substr(5);
  if (!o.steps.empty()) {
    if (o.capture_count != 0) throw InputError("record: --steps and --capture-count: give one of them");
    const std::size_t colon = o.steps.find(':');
    const auto number = [&](const std::string& s) {
      if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
        throw InputError(fmt::format("record: --steps {}: expected FROM:TO, two step numbers (0-based)", o.steps));
      return std::stol(s);
    };
    if (colon == std::string::npos) number("");
    const long from = number(o.steps.substr(0, colon)), to = number(o.steps.substr(colon + 1));
    if (to < from) throw InputError(fmt::format("record: --steps {}: TO is before FROM", o.steps));
    w.first = from;
    w.count = to - from + 1;
  } else if (o.capture_count != 0) {
    if (o.capture_count < 1) throw InputError(fmt::format("record: --capture-count {}: at least 1", o.capture_count));
    w.count = o.capture_count;
  }
  return w;
}

void validate_record_options(const RecordOptions& options) {
  if (options.command.empty())
    throw InputError("record: no program given; usage: attnprof record [-o trace.json] -- CMD ARGS...");
  if (options.output.empty()) throw InputError("record: -o: empty output path");
  if (!ends_with(options.output, ".json") && !ends_with(options.output, ".json.gz"))
    throw InputError(fmt::format("record: -o {}: the trace name must end in .json or .json.gz", options.output));
  const fs::path dir = fs::absolute(options.output).parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(fmt::format("record: -o {}: folder {} does not exist", options.output, dir.string()));
  for (const auto& [name, v] : {std::pair{"--delay", options.delay}, std::pair{"--duration", options.duration}})
    if (!(v >= 0 && v <= 1e6)) throw InputError(fmt::format("record: {} {}: seconds from 0 to 1000000", name, v));
  capture_window(options);  // checks the NVTX window
  if (options.calls != "callbacks" && options.calls != "activity")
    throw InputError(fmt::format("record: --calls {}: expected callbacks or activity", options.calls));
  std::string bad;
  if (!capture::parse_record_kinds(options.kinds, &bad))
    throw InputError(fmt::format("record: --kinds {}: {}; known kinds: all,{}", options.kinds,
                                 bad.empty() ? "no kind named" : "unknown kind '" + bad + "'",
                                 capture::record_kinds_list()));
}

std::vector<std::pair<std::string, std::string>> record_environment(const RecordOptions& options,
                                                                    const std::string& inject_library) {
  const CaptureWindow window = capture_window(options);
  return {
      {"CUDA_INJECTION64_PATH", inject_library},
      {"NVTX_INJECTION64_PATH", inject_library},
      {"ATTNPROF_RECORD_OUTPUT", fs::absolute(options.output).lexically_normal().string()},
      {"ATTNPROF_RECORD_KINDS", options.kinds},
      {"ATTNPROF_RECORD_DELAY", fmt::format("{}", options.delay)},
      {"ATTNPROF_RECORD_DURATION", fmt::format("{}", options.duration)},
      {"ATTNPROF_RECORD_CAPTURE_RANGE", window.range},
      {"ATTNPROF_RECORD_CAPTURE_FIRST", fmt::format("{}", window.first)},
      {"ATTNPROF_RECORD_CAPTURE_COUNT", fmt::format("{}", window.count)},
      {"ATTNPROF_RECORD_CALLS", options.calls},
  };
}

std::string find_inject_library() {
  std::error_code ec;
  if (const char* env = std::getenv("ATTNPROF_INJECT_LIBRARY"); env != nullptr && *env != '\0') {
    if (!fs::exists(env, ec)) throw InputError(fmt::format("record: ATTNPROF_INJECT_LIBRARY={}: no such file", env));
    return fs::absolute(env).string();
  }
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InputError("record: cannot locate the attnprof binary (/proc/self/exe)");
  const fs::path lib = self.parent_path() / kInjectLibrary;
  if (!fs::exists(lib, ec))
    throw InputError(
        fmt::format("record: {} not found next to {} (was attnprof built "
                    "with the CUDA toolkit?)",
                    kInjectLibrary, self.string()));
  return lib.string();
}

int run_with_environment(const std::vector<std::string>& argv,
                         const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) throw InputError(fmt::format("record: cannot start {}: {}", argv[0], std::strerror(errno)));
  if (child == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    // The trace path belongs to this process; children it starts write their own.
    setenv("ATTNPROF_RECORD_PID", std::to_string(getpid()).c_str(), 1);
    execvp(args[0], args.data());
    fmt::print(stderr, "attnprof record: cannot run {}: {}\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  // Ctrl-C reaches the whole foreground group: the program gets it and writes
  // its trace; we wait for it instead of dying first.
  struct sigaction ignore{}, old_int{}, old_term{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGTERM, &ignore, &old_term);
  int status = 0;
  pid_t r;
  do {
    r = waitpid(child, &status, 0);
  } while (r < 0 && errno == EINTR);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (r < 0) throw InputError(fmt::format("record: waiting for {}: {}", argv[0], std::strerror(errno)));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int run_record(const RecordOptions& options) {
  validate_record_options(options);
  const std::string lib = find_inject_library();
  if (const char* skip = std::getenv("ATTNPROF_RECORD_NO_GPU_CHECK"); skip == nullptr || *skip == '\0')
    if (const std::string problem = cuda_device_problem(); !problem.empty())
      throw InputError(
          fmt::format("record: {}; nothing to record, {} was not started", problem, options.command.front()));
  auto env = record_environment(options, lib);
  const std::string trace_path = env[2].second;
  // The recorder says here whether it started: the only way to tell a program
  // that never used CUDA from a recorder that could not start.
  const std::string status_path = trace_path + ".status";
  env.emplace_back("ATTNPROF_RECORD_STATUS", status_path);
  const std::string list_path = capture::trace_list_path(trace_path);
  std::error_code ec;
  fs::remove(trace_path, ec);  // so a stale trace is never taken for this run's
  fs::remove(status_path, ec);
  fs::remove(list_path, ec);
  const int code = run_with_environment(options.command, env);
  std::string status;
  std::ifstream(status_path) >> status;
  fs::remove(status_path, ec);
  const std::vector<capture::WrittenTrace> written = capture::read_trace_list(list_path);
  fs::remove(list_path, ec);
  // The other processes' traces (a launcher's workers), by rank; those that launched no GPU work wrote none.
  std::vector<std::string> traces;
  if (fs::exists(trace_path, ec)) traces.push_back(trace_path);
  std::string children;
  int idle = 0;
  for (const capture::WrittenTrace& t : written) {
    if (t.path == trace_path) continue;
    if (t.path.empty()) {
      ++idle;
      continue;
    }
    if (!fs::exists(t.path, ec)) continue;
    traces.push_back(t.path);
    children += fmt::format("\n  {} ({}pid {})", t.path,
                            t.rank.empty() ? std::string() : fmt::format("rank {}, ", t.rank), t.pid);
  }
  if (!children.empty() || idle > 0)
    fmt::print(stderr, "attnprof record: {} trace{}: {}{}{}\n", traces.size(), report::plural(double(traces.size())),
               fs::exists(trace_path, ec) ? fmt::format("{} (the program)", trace_path)
                                          : std::string("none of the program itself"),
               children,
               idle > 0 ? fmt::format(
                              "\n  ({} other process{} started CUDA but launched no GPU work while recorded: no trace)",
                              idle, report::plural(double(idle), "es"))
                        : "");
  if (traces.empty()) {
    const std::string why =
        status == "refused" ? "the recorder could not start; its reason is printed above"
        : status == "waiting"
            ? (options.capture_range.empty()
                   ? fmt::format("the program ended before the capture window opened (--delay {})", options.delay)
                   : fmt::format("no NVTX range '{}' of the window began (--capture-range {}{})",
                                 options.capture_range.substr(5), options.capture_range,
                                 options.steps.empty() ? std::string() : fmt::format(" --steps {}", options.steps)))
        : idle > 0       ? "its processes launched no GPU work while recorded"
        : status.empty() ? "the program made no CUDA call, so the recorder never started"
                         : "the recorder started but could not write it; its reason is printed above";
    fmt::print(stderr, "attnprof record: no trace written to {}: {}\n", trace_path, why);
    return code;
  }
  if (code == 128 + SIGKILL)
    fmt::print(stderr,
               "attnprof record: the program was killed (SIGKILL); {} holds what was recorded until about a "
               "second before\n",
               traces.size() == 1 ? traces.front() : std::string("each trace"));
  if (options.doctor) {
    // The doctor runs as a child of this same binary: its report goes to stdout, one per trace.
    std::error_code self_ec;
    const std::string self = fs::read_symlink("/proc/self/exe", self_ec).string();
    for (const std::string& t : traces) run_with_environment({self_ec ? "attnprof" : self, "doctor", t}, {});
  }
  return code;
}

void add_record_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<RecordOptions>();
  auto* cmd = app.add_subcommand(
      "record", "Run a CUDA program unchanged and record its kernels, copies, API calls and NVTX ranges");
  cmd->add_option("-o,--output", options->output, "trace to write (.json or .json.gz)")->capture_default_str();
  cmd->add_option("--kinds", options->kinds, "what to record, comma-separated: all," + capture::record_kinds_list())
      ->capture_default_str();
  cmd->add_option("--calls", options->calls,
                  "how CUDA launch and sync calls are recorded: callbacks (CUPTI callbacks into a per-thread log; "
                  "on whenever a capture window opens) or activity (CUPTI's runtime/driver API activity records)")
      ->capture_default_str();
  cmd->add_flag("--doctor", options->doctor, "print the doctor report of the trace afterwards");
  cmd->add_option("--delay", options->delay,
                  "start recording SEC seconds after the program starts CUDA (the recorder is off until then)");
  cmd->add_option("--capture-range", options->capture_range,
                  "record only inside NVTX ranges named so: nvtx:NAME (from its first push to its pop; the "
                  "program runs unrecorded before and after)");
  cmd->add_option("--capture-count", options->capture_count,
                  "with --capture-range: record over N such ranges, from the first's push to the N-th's pop");
  cmd->add_option("--steps", options->steps,
                  "with --capture-range nvtx:STEP: record steps FROM:TO (0-based occurrences of the STEP range), "
                  "e.g. --capture-range nvtx:step --steps 100:109");
  cmd->add_option("--duration", options->duration,
                  "stop recording SEC seconds after it started and write the trace; the program runs on unrecorded "
                  "(default: to the end)");
  // Everything after "--" is positional, so the program's own options pass through.
  cmd->add_option("command", options->command, "the program and its arguments, after --");
  cmd->footer(
      "Needs an NVIDIA GPU and its driver: without them it says so and starts nothing "
      "(ATTNPROF_RECORD_NO_GPU_CHECK=1 skips that check).\n"
      "Example: attnprof record -o t.json -- python3 train.py --steps 10");
  cmd->callback([options, &exit_code] { exit_code = run_record(*options); });
}

}  // namespace attnprof::cli
