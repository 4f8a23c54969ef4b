// libattnprof_inject.so: records an unmodified CUDA program. `attnprof record`
// sets CUDA_INJECTION64_PATH (the driver calls InitializeInjection at cuInit)
// and NVTX_INJECTION64_PATH (NVTX calls InitializeInjectionNvtx2, which we pass
// on to CUPTI) to this library. The trace is streamed: every second what CUPTI
// finished is appended, the file a complete trace after each append (a SIGKILL
// keeps what was written); the rest is written on normal exit, exit() from any
// thread, SIGINT/SIGTERM and crashes; when the program handles SIGINT/SIGTERM
// itself, a checkpoint is written first.
//
// Environment: ATTNPROF_RECORD_OUTPUT (trace path, .json or .json.gz),
// ATTNPROF_RECORD_KINDS (see record_kinds.h), ATTNPROF_RECORD_DELAY and
// ATTNPROF_RECORD_DURATION (the capture window, seconds from cuInit),
// ATTNPROF_RECORD_CAPTURE_RANGE, _FIRST and _COUNT (the window as NVTX ranges:
// from the push of the FIRST-th range named so, 0-based, to the pop of the
// COUNT-th after it), ATTNPROF_RECORD_CALLS ("activity": CUPTI's API records
// for launches instead of callbacks), ATTNPROF_RECORD_PID (the pid the
// path is meant for; other processes, e.g. a launcher's workers, write PATH with
// ".rank<R>" or ".<pid>", and only when they launched GPU work: trace_names.h).
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cupti.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "capture/nvtx_window.h"
#include "capture/recorder.h"
#include "capture/trace_append.h"
#include "capture/trace_names.h"
#include "trace/trace_writer.h"

namespace {

using attnprof::capture::RecorderError;

std::once_flag g_start_once;
std::atomic<bool> g_started{false};
// Never destroyed: signals and exit() from other threads may still use them
// while static destructors run.
std::string& g_output = *new std::string;  // set once in start_recording
int g_wake_pipe[2] = {-1, -1};             // signal handler -> writer thread: a Request
int g_done_pipe[2] = {-1, -1};             // writer thread -> signal handler: trace written

constexpr std::array kHandledSignals = {SIGINT, SIGTERM, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
struct sigaction g_previous[64];

std::string& g_base_output = *new std::string;  // ATTNPROF_RECORD_OUTPUT: the list of traces hangs off it
std::string& g_rank = *new std::string;         // RANK / LOCAL_RANK as the launcher set it, or ""
bool g_main_process = true;                     // the process `attnprof record` started

std::string output_path() {
  const char* env = std::getenv("ATTNPROF_RECORD_OUTPUT");
  g_base_output = env != nullptr && *env != '\0' ? env : "attnprof_trace.json";
  const char* intended = std::getenv("ATTNPROF_RECORD_PID");
  const long pid = static_cast<long>(getpid());
  g_main_process = intended == nullptr || std::to_string(pid) == intended;
  g_rank = attnprof::capture::launcher_rank(std::getenv("RANK"), std::getenv("LOCAL_RANK"));
  return attnprof::capture::process_trace_path(g_base_output, g_main_process, pid, g_rank);
}

bool has_gpu_work(const attnprof::Trace& t) {
  return std::any_of(t.events.begin(), t.events.end(),
                     [](const attnprof::Event& e) { return attnprof::is_gpu_activity(e.kind); });
}

std::string program_name() {
  std::ifstream in("/proc/self/cmdline");
  std::string arg;
  std::string name;
  for (int i = 0; i < 3 && std::getline(in, arg, '\0'); ++i) name += (i ? " " : "") + arg;
  return name;
}

// The trace, streamed: every second (and at a checkpoint) what CUPTI finished is appended to the
// file, which is a complete trace after each append (a SIGKILL keeps what was written). A process
// that is not the program's own opens its file only once it has launched GPU work; until then its
// events wait in g_pending.
std::mutex g_write_mutex;
std::optional<attnprof::TraceStream>& g_stream = *new std::optional<attnprof::TraceStream>;
attnprof::Trace& g_pending = *new attnprof::Trace;
attnprof::Trace& g_tail = *new attnprof::Trace;  // taken after an NVTX window closed: trimmed at the end
bool g_finished = false;

// The capture window as NVTX ranges (--capture-range), when one was asked for.
std::optional<attnprof::capture::NvtxWindow>& g_window = *new std::optional<attnprof::capture::NvtxWindow>;
attnprof::capture::RecorderOptions& g_range_options = *new attnprof::capture::RecorderOptions;  // its recorder's
// The first range of a capture window of NVTX ranges: its push started the recorder, so CUPTI did not
// see it; it is added to the trace from these (the recorder's clock, the pushing thread).
std::atomic<std::int64_t> g_first_start_ns{-1}, g_first_end_ns{-1};
std::atomic<long> g_first_tid{0};
// When a capture window of NVTX ranges closed (the pop of its last range), on the recorder's clock.
std::atomic<std::int64_t> g_range_end_ns{-1};  // when the window's last range was popped

// The process that recorded: a child made by fork() inherits our atexit handler, signal handlers and
// the stream's file descriptor, but not the writer thread; it must neither write nor wait for it.
pid_t g_recording_pid = 0;

// Appends `chunk` to the stream, opening it (claiming the file's name) on first use.
void stream_out(attnprof::Trace& chunk, bool final) {
  if (!g_stream) {
    // Pending events never hold GPU work (the stream opens at the first), so the chunk tells.
    const bool gpu_work = has_gpu_work(chunk);
    attnprof::capture::append_trace(g_pending, chunk);
    if (!g_main_process && !gpu_work) {
      // A process that started CUDA but launched nothing (a compile or data-loading worker): no
      // empty trace beside the real ones, only a line in the list.
      if (final)
        attnprof::capture::append_trace_list(attnprof::capture::trace_list_path(g_base_output),
                                             static_cast<long>(getpid()), g_rank, "");
      return;
    }
    // The stream opens once (a failure ends the recording), so the name is claimed once.
    g_output = attnprof::capture::claim_trace_path(attnprof::capture::trace_list_path(g_base_output), g_output,
                                                   static_cast<long>(getpid()), g_rank);
    g_pending.trace_name = program_name();
    try {
      g_stream.emplace(g_output);
      g_stream->append(g_pending);
    } catch (...) {
      // Cannot write the trace at all: stop recording instead of holding events in memory.
      g_stream.reset();
      g_pending = attnprof::Trace{};
      g_finished = true;
      attnprof::capture::stop();
      throw;
    }
    g_pending = attnprof::Trace{};
    return;
  }
  g_stream->append(chunk);
}

enum class Take { Drain, Checkpoint, Final };

// Takes what CUPTI recorded since the last call and appends it to the streamed trace: finished work
// (Drain, every second), everything now (Checkpoint: the program is being interrupted), or the rest
// (Final: stops recording first and closes NVTX ranges still open).
void write_trace(Take what) {
  const bool final = what == Take::Final;
  if (getpid() != g_recording_pid) return;  // a fork()ed child: the parent owns the trace and its file
  std::lock_guard lock(g_write_mutex);
  if (!g_started.load()) {
    if (final) g_finished = true;  // exiting before the capture window opened: it never will
    return;
  }
  if (g_finished) return;
  try {
    if (final) attnprof::capture::stop();
    attnprof::Trace chunk = attnprof::capture::take(what == Take::Drain ? attnprof::capture::Flush::Completed
                                                                        : attnprof::capture::Flush::Forced);
    if (const std::int64_t end = g_range_end_ns.load(); end >= 0) {
      // The window closed: what comes now may have begun after it. Trimmed once all of it is in.
      attnprof::capture::append_trace(g_tail, chunk);
      if (!final) return;
      chunk = std::exchange(g_tail, attnprof::Trace{});
      attnprof::capture::drop_after(
          chunk, end, (g_range_options.kinds & (attnprof::capture::kRuntime | attnprof::capture::kDriver)) != 0);
    }
    if (const std::int64_t first = g_first_start_ns.load(); final && first >= 0) {
      attnprof::Event e;
      e.kind = attnprof::EventKind::UserAnnotation;
      e.name = chunk.strings.intern(g_window->name());
      e.ts_ns = first;
      const std::int64_t last = g_first_end_ns.load() >= 0 ? g_first_end_ns.load() : g_range_end_ns.load();
      e.dur_ns = last > first ? last - first : 0;
      e.pid = attnprof::Lane(static_cast<std::int64_t>(getpid()), false);
      e.tid = attnprof::Lane(g_first_tid.load(), false);
      chunk.add(e);
      g_first_start_ns = -1;
    }
    stream_out(chunk, final);
    if (!final) return;
    g_finished = true;
    if (g_stream)
      std::fprintf(stderr, "attnprof record: wrote %zu events (%zu kernels) to %s\n", g_stream->events(),
                   g_stream->kernels(), g_output.c_str());
  } catch (const std::exception& e) {
    static bool said = false;  // a full disk fails every second: say it once, and at the end
    if (!g_stream)
      std::fprintf(stderr, "attnprof record: no trace written: %s\n", e.what());
    else if (final || !said)
      std::fprintf(stderr, "attnprof record: %s: %s\n", final ? "trace incomplete" : "trace not updated", e.what());
    said = true;
    g_finished = g_finished || final;
  }
}

void finish() { write_trace(Take::Final); }

enum Request : int { kCheckpoint = 1, kFinish = 2, kFinishNoWait = 3 };
// How often the writer thread streams what was recorded (ATTNPROF_RECORD_DRAIN_MS; 0: only at the end).
int g_drain_ms = 1000;

// The writer thread: waits for a request from a signal handler, writes the
// trace outside signal context (CUPTI, malloc and file I/O are not
// async-signal-safe), then wakes the handler.
void writer_thread() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    pollfd fd{g_wake_pipe[0], POLLIN, 0};
    if (poll(&fd, 1, g_drain_ms > 0 ? g_drain_ms : -1) ==
        0) {  // nothing asked for: stream what CUPTI finished meanwhile
      write_trace(Take::Drain);
      continue;
    }
    int request = 0;
    if (read(g_wake_pipe[0], &request, sizeof request) != static_cast<ssize_t>(sizeof request)) continue;
    write_trace(request == kCheckpoint ? Take::Checkpoint : Take::Final);
    if (request == kFinishNoWait) continue;  // nobody waits for it
    const char done = 1;
    [[maybe_unused]] auto n = write(g_done_pipe[1], &done, 1);
  }
}

// Async-signal-safe: hands a request to the writer thread and waits for it. A
// signal that arrived inside CUDA or malloc could stall the writer, so the wait
// is bounded.
void request_and_wait(Request request) {
  [[maybe_unused]] auto n = write(g_wake_pipe[1], &request, sizeof request);
  pollfd fd{g_done_pipe[0], POLLIN, 0};
  if (poll(&fd, 1, 15000) > 0) {
    char done = 0;
    [[maybe_unused]] auto m = read(g_done_pipe[0], &done, 1);
  }
}

bool is_function(const struct sigaction& sa) {
  if (sa.sa_flags & SA_SIGINFO) return sa.sa_sigaction != nullptr;
  return sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN;
}

void call_previous(int signo, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[signo];
  if (prev.sa_flags & SA_SIGINFO)
    prev.sa_sigaction(signo, info, context);
  else
    prev.sa_handler(signo);
}

void on_signal(int signo, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const struct sigaction& prev = g_previous[signo];
  // A fork()ed child (a DataLoader worker) has no writer thread and no trace of its own: it takes
  // the same path without asking for a write.
  const bool recording = getpid() == g_recording_pid;
  const bool terminate = signo == SIGINT || signo == SIGTERM;
  if (terminate && prev.sa_handler == SIG_IGN && !(prev.sa_flags & SA_SIGINFO)) return;
  if (terminate && is_function(prev)) {
    // The program handles it (Python raises KeyboardInterrupt). It may still
    // die of it without exit() (Python re-raises SIGINT after finalizing), so
    // checkpoint the trace now; a normal exit later rewrites it complete.
    if (recording) request_and_wait(kCheckpoint);
    errno = saved_errno;
    call_previous(signo, info, context);
    return;
  }
  static std::atomic<bool> once{false};
  if (recording && !once.exchange(true)) request_and_wait(kFinish);
  if (!terminate && is_function(prev)) {  // the program's own crash handler
    errno = saved_errno;
    call_previous(signo, info, context);
    return;
  }
  signal(signo, SIG_DFL);
  raise(signo);  // crashes: returning re-runs the fault under the default action
}

void install_handlers() {
  if (pipe(g_wake_pipe) != 0 || pipe(g_done_pipe) != 0) {
    std::perror("attnprof record: pipe (traces of killed programs will be lost)");
    return;
  }
  std::thread(writer_thread).detach();
  for (int signo : kHandledSignals) {
    struct sigaction sa{};
    sa.sa_sigaction = &on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, &g_previous[signo]) != 0) std::perror("attnprof record: sigaction");
  }
}

// One word for `attnprof record`, which cannot see whether the recorder ran:
// "started" or "refused" (no file: the program never initialized CUDA).
void report_status(const char* status) {
  if (!g_main_process) return;  // the program's own process speaks for the run; its children list themselves
  const char* path = std::getenv("ATTNPROF_RECORD_STATUS");
  if (path == nullptr || *path == '\0') return;
  if (std::FILE* f = std::fopen(path, "w")) {
    std::fputs(status, f);
    std::fclose(f);
  }
}

// Starts the recorder; when CUPTI refuses, says why (and tells `attnprof record`) and returns false.
bool start_recorder(const attnprof::capture::RecorderOptions& options) {
  try {
    attnprof::capture::start(options);
  } catch (const RecorderError& e) {
    std::fprintf(stderr, "%s; no trace will be written\n", e.what());
    report_status("refused");
    return false;
  }
  g_started = true;
  return true;
}

// A number from the environment; 0 when unset or not a number from 0 to 1e6.
double env_number(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return end != v && *end == '\0' && s >= 0 && s <= 1e6 ? s : 0;
}

void sleep_seconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// The capture window's thread: starts the recorder after `delay` (when the program still runs), and
// ends the recording after `duration`, writing the trace then; the program runs on unrecorded.
void window_thread(attnprof::capture::RecorderOptions options, double delay, double duration) {
  sigset_t all;  // signals go to the program's threads and the writer, never here (we hold g_write_mutex)
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  if (delay > 0) {
    sleep_seconds(delay);
    {
      std::lock_guard lock(g_write_mutex);
      if (g_finished || !start_recorder(options)) return;  // finished: the program is exiting
    }
    report_status("started");
  }
  if (duration > 0) {
    sleep_seconds(duration);
    write_trace(Take::Final);
  }
}

// The recorder follows the capture window of NVTX ranges inside the application's NVTX calls.

void on_nvtx(bool push, const char* name) {
  using Action = attnprof::capture::NvtxWindow::Action;
  thread_local attnprof::capture::NvtxWindow::Thread thread;
  if (push) {
    if (g_window->push(name, thread) != Action::Open) return;
    {
      std::lock_guard lock(g_write_mutex);
      if (g_finished) return;
      g_first_tid = static_cast<long>(gettid());
      g_first_start_ns = attnprof::capture::timestamp_ns();
      if (!start_recorder(g_range_options)) {
        g_window->close();
        return;
      }
    }
    report_status("started");
    return;
  }
  const Action action = g_window->pop(thread);
  if (action == Action::None) return;
  if (g_first_end_ns.load() < 0) g_first_end_ns = attnprof::capture::timestamp_ns();
  if (action == Action::Close) {
    g_range_end_ns = attnprof::capture::timestamp_ns();  // what starts later is not the window's
    const int request = kFinishNoWait;                   // the writer thread stops and writes; this thread goes on
    [[maybe_unused]] auto n = write(g_wake_pipe[1], &request, sizeof request);
  }
}

void start_recording() {
  g_recording_pid = getpid();
  g_output = output_path();
  if (const char* drain = std::getenv("ATTNPROF_RECORD_DRAIN_MS"); drain != nullptr && *drain != '\0')
    g_drain_ms = static_cast<int>(std::min(env_number("ATTNPROF_RECORD_DRAIN_MS"), 3.6e6));
  std::uint32_t kinds = attnprof::capture::kAllKinds;
  if (const char* env = std::getenv("ATTNPROF_RECORD_KINDS"); env != nullptr && *env != '\0') {
    std::string bad;
    const auto parsed = attnprof::capture::parse_record_kinds(env, &bad);
    if (!parsed) {
      std::fprintf(stderr, "attnprof record: ATTNPROF_RECORD_KINDS: unknown kind '%s'\n", bad.c_str());
      report_status("refused");
      return;
    }
    kinds = *parsed;
  }
  attnprof::capture::RecorderOptions options;
  options.kinds = kinds;
  const char* calls = std::getenv("ATTNPROF_RECORD_CALLS");
  options.calls = calls != nullptr && std::string_view(calls) == "activity" ? attnprof::capture::CallTracing::Activity
                                                                            : attnprof::capture::CallTracing::Callbacks;
  if (const char* attrs = std::getenv("ATTNPROF_RECORD_CUPTI_ATTRS"); attrs != nullptr && *attrs != '\0') {
    std::string bad;
    const auto parsed = attnprof::capture::parse_cupti_attributes(attrs, &bad);
    if (!parsed) {
      std::fprintf(stderr,
                   "attnprof record: ATTNPROF_RECORD_CUPTI_ATTRS: bad item '%s' (per_thread_buffers=0|1, "
                   "host_pinned=0|1, device_buffer_mb=1..1024)\n",
                   bad.c_str());
      report_status("refused");
      return;
    }
    options.cupti_attributes = *parsed;
  }
  const double delay = env_number("ATTNPROF_RECORD_DELAY"), duration = env_number("ATTNPROF_RECORD_DURATION");
  if (const char* range = std::getenv("ATTNPROF_RECORD_CAPTURE_RANGE"); range != nullptr && *range != '\0') {
    g_window.emplace(range, static_cast<long>(env_number("ATTNPROF_RECORD_CAPTURE_FIRST")),
                     static_cast<long>(env_number("ATTNPROF_RECORD_CAPTURE_COUNT")));
    g_range_options = options;  // started after cuInit: CUPTI's API-call filter is not available
    install_handlers();         // the writer thread closes the window
    std::atexit(finish);
    try {
      attnprof::capture::arm(&on_nvtx);
    } catch (const RecorderError& e) {
      std::fprintf(stderr, "%s; no trace will be written\n", e.what());
      report_status("refused");
      return;
    }
    report_status("waiting");
    return;
  }
  if (delay > 0) {
    // Off until the window opens. CUPTI's own API-call filter works only when enabled during cuInit
    // (recorder.h): started later, the recorder traces all calls and filters while converting.
    options.filter_api_calls_in_cupti = false;
    report_status("waiting");
  } else {
    options.filter_api_calls_in_cupti = true;  // we start during cuInit (see recorder.h)
    if (!start_recorder(options)) return;
    report_status("started");
  }
  std::atexit(finish);  // exit() from any thread runs it; stops CUPTI before CUDA tears down
  install_handlers();
  if (delay > 0 || duration > 0) std::thread(window_thread, options, delay, duration).detach();
}

}  // namespace

// Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names us.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  std::call_once(g_start_once, start_recording);
  return 1;
}

// Called by NVTX at its first call when NVTX_INJECTION64_PATH names us:
// CUPTI implements NVTX capture, so hand NVTX to the loaded libcupti.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void* get_export_table) {
  std::call_once(g_start_once, start_recording);
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) == 0 || info.dli_fname == nullptr) return 0;
  void* cupti = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (cupti == nullptr) return 0;
  using Init = int (*)(const void*);
  auto init = reinterpret_cast<Init>(dlsym(cupti, "InitializeInjectionNvtx2"));
  return init != nullptr ? init(get_export_table) : 0;
}
