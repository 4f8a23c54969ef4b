// libattnprof_inject.so: records an unmodified CUDA program. `attnprof record`
// sets CUDA_INJECTION64_PATH (the driver calls InitializeInjection at cuInit)
// and NVTX_INJECTION64_PATH (NVTX calls InitializeInjectionNvtx2, which we pass
// on to CUPTI) to this library. The trace is written once, atomically, on
// normal exit, exit() from any thread, SIGINT/SIGTERM and crashes.
//
// Environment: ATTNPROF_RECORD_OUTPUT (trace path, .json or .json.gz),
// ATTNPROF_RECORD_KINDS (see record_kinds.h), ATTNPROF_RECORD_PID (the pid the
// path is meant for; other processes, e.g. children, write PATH with ".<pid>").
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cupti.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "capture/recorder.h"
#include "trace/trace_writer.h"

namespace {

using attnprof::capture::RecorderError;

std::once_flag g_start_once;
std::once_flag g_finish_once;
std::atomic<bool> g_started{false};
std::string g_output;  // set once in start_recording, read in finish
int g_wake_pipe[2] = {-1, -1};  // signal handler -> writer thread: signal number
int g_done_pipe[2] = {-1, -1};  // writer thread -> signal handler: trace written

constexpr std::array kHandledSignals = {SIGINT, SIGTERM, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
struct sigaction g_previous[64];

std::string output_path() {
  const char* env = std::getenv("ATTNPROF_RECORD_OUTPUT");
  std::string path = env != nullptr && *env != '\0' ? env : "attnprof_trace.json";
  const char* intended = std::getenv("ATTNPROF_RECORD_PID");
  const std::string pid = std::to_string(getpid());
  if (intended == nullptr || pid == intended) return path;
  // Another process of the recorded program (a child): keep its trace apart.
  std::size_t ext = path.rfind(".json");
  if (ext == std::string::npos) ext = path.size();
  return path.substr(0, ext) + "." + pid + path.substr(ext);
}

std::string program_name() {
  std::ifstream in("/proc/self/cmdline");
  std::string arg;
  std::string name;
  for (int i = 0; i < 3 && std::getline(in, arg, '\0'); ++i) name += (i ? " " : "") + arg;
  return name;
}

void finish_now() {
  if (!g_started.load()) return;
  try {
    attnprof::capture::stop();
    attnprof::Trace trace = attnprof::capture::take();
    trace.trace_name = program_name();
    std::size_t kernels = 0;
    for (const auto& e : trace.events) kernels += e.kind == attnprof::EventKind::Kernel;
    attnprof::write_trace_file(trace, g_output);
    std::fprintf(stderr, "attnprof record: wrote %zu events (%zu kernels) to %s\n",
                 trace.events.size(), kernels, g_output.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnprof record: no trace written: %s\n", e.what());
  }
}

// Runs at most once, whichever of exit, signal or crash comes first.
void finish() { std::call_once(g_finish_once, finish_now); }

// The writer thread: waits for a signal number from the handler, writes the
// trace outside signal context (CUPTI, malloc and file I/O are not
// async-signal-safe), then wakes the handler.
void writer_thread() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  int signo = 0;
  while (read(g_wake_pipe[0], &signo, sizeof signo) != static_cast<ssize_t>(sizeof signo)) {
  }
  finish();
  const char done = 1;
  [[maybe_unused]] auto n = write(g_done_pipe[1], &done, 1);
}

bool is_function(const struct sigaction& sa) {
  if (sa.sa_flags & SA_SIGINFO) return sa.sa_sigaction != nullptr;
  return sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN;
}

void on_signal(int signo, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[signo];
  const bool terminate = signo == SIGINT || signo == SIGTERM;
  // The program handles SIGINT/SIGTERM itself (Python raises KeyboardInterrupt):
  // let it, and write the trace when it exits.
  if (terminate && is_function(prev)) {
    if (prev.sa_flags & SA_SIGINFO) prev.sa_sigaction(signo, info, context);
    else prev.sa_handler(signo);
    return;
  }
  if (terminate && prev.sa_handler == SIG_IGN) return;
  static std::atomic<bool> once{false};
  if (!once.exchange(true)) {
    [[maybe_unused]] auto n = write(g_wake_pipe[1], &signo, sizeof signo);
    pollfd fd{g_done_pipe[0], POLLIN, 0};
    poll(&fd, 1, 30000);  // a crash inside malloc could stall the writer: give up after 30 s
  }
  if (!terminate && is_function(prev)) {  // a crash handler of the program's own
    if (prev.sa_flags & SA_SIGINFO) prev.sa_sigaction(signo, info, context);
    else prev.sa_handler(signo);
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
    struct sigaction sa {};
    sa.sa_sigaction = &on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, &g_previous[signo]) != 0)
      std::perror("attnprof record: sigaction");
  }
}

void start_recording() {
  g_output = output_path();
  std::uint32_t kinds = attnprof::capture::kAllKinds;
  if (const char* env = std::getenv("ATTNPROF_RECORD_KINDS"); env != nullptr && *env != '\0') {
    std::string bad;
    const auto parsed = attnprof::capture::parse_record_kinds(env, &bad);
    if (!parsed) {
      std::fprintf(stderr, "attnprof record: ATTNPROF_RECORD_KINDS: unknown kind '%s'\n", bad.c_str());
      return;
    }
    kinds = *parsed;
  }
  try {
    attnprof::capture::RecorderOptions options;
    options.kinds = kinds;
    attnprof::capture::start(options);
  } catch (const RecorderError& e) {
    std::fprintf(stderr, "%s; no trace will be written\n", e.what());
    return;
  }
  g_started = true;
  std::atexit(finish);
  install_handlers();
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
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) == 0 || info.dli_fname == nullptr)
    return 0;
  void* cupti = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (cupti == nullptr) return 0;
  using Init = int (*)(const void*);
  auto init = reinterpret_cast<Init>(dlsym(cupti, "InitializeInjectionNvtx2"));
  return init != nullptr ? init(get_export_table) : 0;
}
