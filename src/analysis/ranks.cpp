#include "analysis/ranks.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <thread>

#include <filesystem>
#include <iterator>

#include <fmt/format.h>
#include <simdjson.h>

#include "analysis/trace_index.h"
#include "common/input_error.h"
#include "common/json.h"
#include "trace/trace_reader.h"

namespace attnprof {

std::string RankAttention::dispatch() const {
  if (impl == AttentionImpl::Fused) return kernel.empty() ? "fused" : fmt::format("fused ({})", kernel);
  return std::string(to_string(impl));
}

std::string RankSummary::dispatch() const {
  if (attention.empty()) return "no attention";
  // Each implementation with its passes: "fused (cuDNN) fwd+bwd, sdpa-math fwd".
  std::vector<std::pair<std::string, std::string>> parts;
  for (const RankAttention& a : attention) {
    const std::string d = a.dispatch(), pass = a.pass == AttentionPass::Forward ? "fwd" : "bwd";
    auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == d; });
    if (it == parts.end())
      parts.emplace_back(d, pass);
    else if (it->second.find(pass) == std::string::npos)
      it->second += "+" + pass;
  }
  std::string out;
  for (const auto& [d, passes] : parts) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", d, passes);
  return out;
}

namespace {

// RankSummary::strip: each activity of the window adds its overlap with a bin to that bin's kind; a bin
// is idle under 5% covered, else its largest kind, in capitals from half covered.
std::string median_step_strip(const Analysis& a, const TraceIndex& index, std::int64_t start, std::int64_t end) {
  if (end <= start) return {};
  constexpr std::size_t kKinds = 4;  // compute, attention, comm, copy
  std::vector<std::array<std::int64_t, kKinds>> bins(kStripBins, std::array<std::int64_t, kKinds>{});
  const double width = static_cast<double>(end - start) / kStripBins;
  const auto& acts = index.activities();
  for (std::size_t i = 0; i < acts.size(); ++i) {
    const Event& e = index.event(acts[i]);
    if (e.end_ns() <= start || e.ts_ns >= end) continue;
    const KernelCategory c = acts[i].cls.category;
    const std::size_t kind = c == KernelCategory::Communication                           ? 2
                             : c == KernelCategory::Memcpy || c == KernelCategory::Memset ? 3
                             : a.attention_calls.in_attention(i)                          ? 1
                                                                                          : 0;
    const std::int64_t from = std::max(e.ts_ns, start), to = std::min(e.end_ns(), end);
    for (auto b = static_cast<std::size_t>(static_cast<double>(from - start) / width);
         b < bins.size() && start + static_cast<std::int64_t>(static_cast<double>(b) * width) < to; ++b) {
      const auto lo = std::max(from, start + static_cast<std::int64_t>(static_cast<double>(b) * width));
      const auto hi = std::min(to, start + static_cast<std::int64_t>(static_cast<double>(b + 1) * width));
      if (hi > lo) bins[b][kind] += hi - lo;
    }
  }
  std::string out;
  for (const auto& b : bins) {
    const auto top = std::max_element(b.begin(), b.end());
    std::int64_t covered = 0;
    for (std::int64_t v : b) covered += v;
    const char kind = "canm"[top - b.begin()];
    const double share = static_cast<double>(covered) / width;
    out += share < 0.05 ? '.' : share < 0.5 ? kind : static_cast<char>(std::toupper(kind));
  }
  return out;
}

}  // namespace

RankSummary summarize_rank(const Analysis& a, const TraceIndex& index, const std::string& path) {
  const Trace& t = index.trace();
  RankSummary r;
  r.path = path;
  r.rank = t.rank >= 0 ? static_cast<int>(t.rank) : -1;
  if (r.rank >= 0) r.rank_from = "distributedInfo";
  r.world_size = t.world_size >= 0 ? static_cast<int>(t.world_size) : -1;
  r.backend = t.dist_backend;
  r.device = a.device.name;
  if (!a.unsupported.empty()) {
    r.error = "not diagnosed: " + a.unsupported;
    return r;
  }
  if (a.step_group < 0) {
    r.error = "no GPU work in the trace";
    return r;
  }
  const GroupStats& g = a.groups[static_cast<std::size_t>(a.step_group)];
  r.region = g.group.name;
  r.steps = static_cast<int>(g.group.instances.size());
  if (const StepTime* s = g.steps.median_step()) {
    r.span_ns = s->span_ns;
    r.busy_ns = s->busy_ns;
    r.compute_ns = std::max<std::int64_t>(0, s->busy_ns - s->comm_exposed_ns - s->copy_only_ns);
    r.comm_ns = s->comm_ns;
    r.comm_exposed_ns = s->comm_exposed_ns + s->cause_ns(IdleCause::Comm);
    r.bound = s->bound;
    r.strip = median_step_strip(a, index, s->start_ns, s->end_ns);
  }
  const double steps = std::max(1, r.steps);
  for (const AttentionSummary& s : g.attention) {  // phases of one implementation and pass as one
    const auto same = std::find_if(r.attention.begin(), r.attention.end(), [&](const RankAttention& x) {
      return x.impl == s.impl && x.pass == s.pass && x.kernel == s.kernel;
    });
    const auto ns = static_cast<std::int64_t>(static_cast<double>(s.kernel_ns) / steps);
    if (same != r.attention.end()) {
      same->calls += s.calls / steps;
      same->ns += ns;
    } else {
      r.attention.push_back(RankAttention{s.impl, s.pass, s.kernel, s.calls / steps, ns});
    }
  }
  for (const Finding& f : a.findings) {
    if (std::find(r.findings.begin(), r.findings.end(), f.id) == r.findings.end()) r.findings.push_back(f.id);
    Finding kept;  // what the gate reads and the summary's JSON carries; the trace is gone
    kept.id = f.id;
    kept.scope = f.scope;
    kept.severity = f.severity;
    r.finding_list.push_back(std::move(kept));
  }
  return r;
}

namespace {

template <typename Read>
RankSummary summarize_read(const std::string& label, const RegionOptions& options, Read read) {
  try {
    // The trace lives only while its summary is made: peak memory is one trace per worker.
    const Trace t = read();
    const TraceIndex index(t);
    const Analysis a = analyze(index, options, label);
    RankSummary r = summarize_rank(a, index, label);
    r.bytes = t.source_bytes;
    return r;
  } catch (const InputError& e) {
    RankSummary r;
    r.path = label;
    r.error = e.what();
    return r;
  } catch (const std::exception& e) {  // one rank's failure must not take the others down
    RankSummary r;
    r.path = label;
    r.error = fmt::format("{}: internal error: {}", label, e.what());
    return r;
  }
}

}  // namespace

RankSummary summarize_trace(const std::string& path, const RegionOptions& options) {
  return summarize_read(path, options,
                        [&] { return read_trace_file(path, ReadOptions{.detail = ReadDetail::Analysis}); });
}

RankSummary summarize_trace_bytes(std::string_view bytes, const std::string& label, const RegionOptions& options) {
  return summarize_read(label, options,
                        [&] { return read_trace_bytes(bytes, label, ReadOptions{.detail = ReadDetail::Analysis}); });
}

namespace {

#if defined(__GLIBC__)
// Large blocks (a trace's events, its index) from mmap, returned whole when freed. glibc otherwise
// raises its mmap threshold to the largest block freed so far (up to 32 MB), after which a worker's
// next trace comes from the heap and the heap keeps what fragments: peak memory grew with the number
// of ranks (64 ranks of 100 MB with two workers: 2.18x one trace; 1.88x with this, 6% more time).
void fix_mmap_threshold() {
  static std::once_flag fixed_threshold;
  std::call_once(fixed_threshold, [] { mallopt(M_MMAP_THRESHOLD, 1 << 20); });
}
#endif

// Reads one trace, its pages handed back after (each worker's arena would keep its largest trace).
RankSummary summarize_one(const std::string& path, const RegionOptions& options) {
  RankSummary r = summarize_trace(path, options);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  return r;
}

std::vector<RankSummary> summarize_in_threads(const std::vector<std::string>& paths, const RegionOptions& options,
                                              unsigned jobs,
                                              const std::function<void(int, int, std::uint64_t)>& progress) {
  std::vector<RankSummary> out(paths.size());
  std::atomic<std::size_t> next{0};
  std::mutex m;
  int done = 0;
  std::uint64_t bytes = 0;
  auto work = [&] {
    for (std::size_t i = next++; i < paths.size(); i = next++) {
      out[i] = summarize_one(paths[i], options);
      const std::lock_guard lock(m);
      ++done;
      bytes += out[i].bytes;
      if (progress) progress(done, static_cast<int>(paths.size()), bytes);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned j = 1; j < jobs; ++j) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return out;
}

#if defined(__linux__)
// Writes all of `text` to fd; false when the reader has gone.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// A worker process: takes trace indices from the shared counter until none is left, saying which it
// starts ("S <i>\n") and handing back each summary ("R <i> <bytes>\n" and its JSON).
[[noreturn]] void process_worker(const std::vector<std::string>& paths, const RegionOptions& options,
                                 std::atomic<std::size_t>* next, int fd) {
  for (std::size_t i = (*next)++; i < paths.size(); i = (*next)++) {
    if (!write_all(fd, fmt::format("S {}\n", i))) ::_exit(1);
    const std::string json = rank_summary_json(summarize_one(paths[i], options));
    if (!write_all(fd, fmt::format("R {} {}\n", i, json.size())) || !write_all(fd, json)) ::_exit(1);
  }
  ::_exit(0);
}

// One worker process a job: separate address spaces, so that the workers' page faults, unmaps and
// allocator locks do not contend as threads of one process do (64 traces of 100 MB on 16 cores: threads
// 1.31-1.46x the arithmetic, processes 1.15-1.26x). A worker that dies (a signal) loses the trace it was
// reading, named in that trace's summary; traces no worker took are read here. Empty where fork or pipe
// fails (the caller reads in threads).
std::optional<std::vector<RankSummary>> summarize_in_processes(
    const std::vector<std::string>& paths, const RegionOptions& options, unsigned jobs,
    const std::function<void(int, int, std::uint64_t)>& progress) {
  void* shared =
      ::mmap(nullptr, sizeof(std::atomic<std::size_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return std::nullopt;
  auto* next = new (shared) std::atomic<std::size_t>(0);
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
    std::string buffer;
    std::int64_t reading = -1;  // the trace it said it started and has not handed back
  };
  std::vector<Worker> workers;
  std::fflush(stdout);
  std::fflush(stderr);
  for (unsigned j = 0; j < jobs; ++j) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) break;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      for (const Worker& w : workers) ::close(w.fd);
      process_worker(paths, options, next, fds[1]);
    }
    ::close(fds[1]);
    if (pid < 0) {
      ::close(fds[0]);
      break;
    }
    workers.push_back({pid, fds[0], {}, -1});
  }
  if (workers.empty()) {
    ::munmap(shared, sizeof(std::atomic<std::size_t>));
    return std::nullopt;
  }
  std::vector<RankSummary> out(paths.size());
  std::vector<bool> have(paths.size(), false);
  int done = 0;
  std::uint64_t bytes = 0;
  const auto finished = [&](std::size_t i) {
    have[i] = true;
    ++done;
    bytes += out[i].bytes;
    if (progress) progress(done, static_cast<int>(paths.size()), bytes);
  };
  // Takes the complete records at the front of a worker's buffer.
  const auto take = [&](Worker& w) {
    for (;;) {
      const std::size_t eol = w.buffer.find('\n');
      if (eol == std::string::npos) return;
      const std::string head = w.buffer.substr(0, eol);
      std::size_t i = 0, n = 0;
      if (head.starts_with("S ")) {
        i = std::stoull(head.substr(2));
        w.reading = static_cast<std::int64_t>(i);
        w.buffer.erase(0, eol + 1);
        continue;
      }
      if (std::sscanf(head.c_str(), "R %zu %zu", &i, &n) != 2 || i >= paths.size()) {  // not ours: stop reading it
        w.buffer.clear();
        return;
      }
      if (w.buffer.size() < eol + 1 + n) return;
      try {
        out[i] = rank_summary_from_json(std::string_view(w.buffer).substr(eol + 1, n));
      } catch (const InputError& e) {
        out[i] = RankSummary{};
        out[i].path = paths[i];
        out[i].error = fmt::format("{}: internal error: {}", paths[i], e.what());
      }
      w.reading = -1;
      w.buffer.erase(0, eol + 1 + n);
      finished(i);
    }
  };
  std::vector<pollfd> polls;
  for (;;) {
    polls.clear();
    for (const Worker& w : workers)
      if (w.fd >= 0) polls.push_back({w.fd, POLLIN, 0});
    if (polls.empty()) break;
    if (::poll(polls.data(), polls.size(), -1) < 0 && errno != EINTR) break;
    for (Worker& w : workers) {
      if (w.fd < 0) continue;
      const auto it = std::find_if(polls.begin(), polls.end(), [&](const pollfd& p) { return p.fd == w.fd; });
      if (it == polls.end() || it->revents == 0) continue;
      char chunk[65536];
      const ssize_t n = ::read(w.fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        w.buffer.append(chunk, static_cast<std::size_t>(n));
        take(w);
        continue;
      }
      ::close(w.fd);  // the worker is done, or died
      w.fd = -1;
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (w.reading >= 0 && !have[static_cast<std::size_t>(w.reading)]) {
        const auto i = static_cast<std::size_t>(w.reading);
        out[i].path = paths[i];
        out[i].error = WIFSIGNALED(status)
                           ? fmt::format("{}: reading it ended its worker process (signal {}: {})", paths[i],
                                         WTERMSIG(status), strsignal(WTERMSIG(status)))
                           : fmt::format("{}: its worker process exited ({}) before handing back its summary", paths[i],
                                         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        finished(i);
      }
    }
  }
  ::munmap(shared, sizeof(std::atomic<std::size_t>));
  for (std::size_t i = 0; i < paths.size(); ++i)  // no worker took it (they all ended early)
    if (!have[i]) {
      out[i] = summarize_one(paths[i], options);
      finished(i);
    }
  return out;
}
#endif

}  // namespace

std::vector<RankSummary> summarize_ranks(const std::vector<std::string>& paths, const RegionOptions& options,
                                         unsigned jobs, const std::function<void(int, int, std::uint64_t)>& progress,
                                         RankWorkers workers) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min<unsigned>(jobs, static_cast<unsigned>(std::max<std::size_t>(1, paths.size())));
#if defined(__GLIBC__)
  fix_mmap_threshold();
#endif
#if defined(__linux__)
  if (workers == RankWorkers::Processes && jobs > 1)
    if (auto out = summarize_in_processes(paths, options, jobs, progress)) return std::move(*out);
#endif
  return summarize_in_threads(paths, options, jobs, progress);
}

std::optional<int> rank_in_name(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (auto at = name.find("rank"); at != std::string::npos; at = name.find("rank", at + 1)) {
    std::size_t p = at + 4;
    if (p < name.size() && (name[p] == '-' || name[p] == '_')) ++p;
    std::size_t q = p;
    while (q < name.size() && std::isdigit(static_cast<unsigned char>(name[q]))) ++q;
    if (q > p && q - p < 8) return std::stoi(name.substr(p, q - p));
  }
  return std::nullopt;
}

namespace {

Spread spread_of(const std::vector<const RankSummary*>& ranks, std::int64_t RankSummary::* field) {
  Spread s;
  if (ranks.empty()) return s;
  std::vector<std::pair<std::int64_t, int>> v;
  for (const RankSummary* r : ranks) v.emplace_back(r->*field, r->rank);
  std::sort(v.begin(), v.end());
  s.min = v.front().first;
  s.min_rank = v.front().second;
  s.max = v.back().first;
  s.max_rank = v.back().second;
  s.median = v[(v.size() - 1) / 2].first;
  return s;
}

}  // namespace

CrossRank compare_ranks(std::vector<RankSummary>& ranks) {
  // Ranks: every trace's distributedInfo, else every file name's, else the order given (a bad trace,
  // unread, takes its file name's rank or its place).
  const bool all_info =
      std::all_of(ranks.begin(), ranks.end(), [](const RankSummary& r) { return !r.ok() || r.rank >= 0; });
  const bool all_named =
      std::all_of(ranks.begin(), ranks.end(), [](const RankSummary& r) { return rank_in_name(r.path).has_value(); });
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    RankSummary& r = ranks[i];
    if (all_info && r.ok()) continue;
    if (const auto named = rank_in_name(r.path); named && (all_named || all_info)) {
      r.rank = *named;
      r.rank_from = "file name";
    } else if (all_info) {  // a bad trace among traces that say their ranks: its rank is unknown
      r.rank = -1;
      r.rank_from.clear();
    } else {
      r.rank = static_cast<int>(i);
      r.rank_from = "order";
    }
  }
  std::map<int, const RankSummary*> seen;
  for (const RankSummary& r : ranks)
    if (r.rank < 0) {
      continue;
    } else if (auto [it, fresh] = seen.emplace(r.rank, &r); !fresh)
      throw InputError(fmt::format("{} and {} are both rank {} ({}): not the traces of one job", it->second->path,
                                   r.path, r.rank, r.rank_from));
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankSummary& a, const RankSummary& b) { return a.rank < b.rank; });
  CrossRank c;
  std::vector<const RankSummary*> good;
  for (const RankSummary& r : ranks) {
    if (!r.ok()) {
      ++c.bad;
      continue;
    }
    good.push_back(&r);
    if (r.world_size >= 0) {
      if (c.world_size >= 0 && r.world_size != c.world_size)
        throw InputError(fmt::format("{} has world size {}, {} has {}: not the traces of one job", good.front()->path,
                                     c.world_size, r.path, r.world_size));
      c.world_size = r.world_size;
    }
    if (c.backend.empty()) c.backend = r.backend;
    if (r.region != good.front()->region)
      throw InputError(fmt::format("{} steps by '{}', {} by '{}': not the traces of one job", good.front()->path,
                                   good.front()->region, r.path, r.region));
  }
  if (c.world_size >= 0)
    for (const RankSummary* r : good)
      if (r->rank >= c.world_size)
        throw InputError(fmt::format("{}: rank {} in a job of world size {}", r->path, r->rank, c.world_size));
  c.ranks = static_cast<int>(good.size());
  if (good.empty()) return c;
  c.span = spread_of(good, &RankSummary::span_ns);
  c.busy = spread_of(good, &RankSummary::busy_ns);
  c.compute = spread_of(good, &RankSummary::compute_ns);
  c.comm = spread_of(good, &RankSummary::comm_ns);
  c.comm_exposed = spread_of(good, &RankSummary::comm_exposed_ns);
  if (good.size() >= 2 && c.compute.max > c.compute.median) {
    c.slowest_rank = c.compute.max_rank;
    c.slowest_excess_ns = c.compute.max - c.compute.median;
    c.slowest_over_median =
        c.compute.median > 0 ? static_cast<double>(c.compute.max) / static_cast<double>(c.compute.median) : 0;
    // A straggler computes >= 10% longer than the median rank and waits less than it on communication:
    // the others wait for it at the collectives.
    for (const RankSummary* r : good) {
      const std::int64_t excess = r->compute_ns - c.compute.median;
      if (excess > 0 && excess * 10 >= c.compute.median && r->comm_exposed_ns < c.comm_exposed.median)
        c.stragglers.push_back(r->rank);
    }
  }
  if (good.size() >= 2) {
    // Dispatch: the most common one is the usual; every other is named with its ranks.
    std::map<std::string, std::vector<int>> by;
    for (const RankSummary* r : good) by[r->dispatch()].push_back(r->rank);
    if (by.size() > 1) {
      auto usual = std::max_element(by.begin(), by.end(), [](const auto& a, const auto& b) {
        return a.second.size() < b.second.size() || (a.second.size() == b.second.size() && a.first > b.first);
      });
      for (const auto& [d, rs] : by)
        if (d != usual->first) c.dispatch_differs.push_back(DispatchDiffers{rs, d, usual->first});
    }
  }
  return c;
}

}  // namespace attnprof

namespace attnprof {
namespace {

// The enum value whose name is `text`, over values [0, count).
template <typename E>
E parse_named(std::string_view text, int count, std::string_view what) {
  for (int i = 0; i < count; ++i)
    if (to_string(static_cast<E>(i)) == text) return static_cast<E>(i);
  throw InputError(fmt::format("rank summary: '{}' is not a {}", text, what));
}

}  // namespace

std::string rank_summary_json(const RankSummary& r) {
  std::string out;
  JsonWriter j(out);
  j.begin_object();
  j.str("path", r.path);
  j.str("error", r.error);
  j.num("rank", r.rank);
  j.str("rank_from", r.rank_from);
  j.num("world_size", r.world_size);
  j.str("backend", r.backend);
  j.str("device", r.device);
  j.str("region", r.region);
  j.num("steps", r.steps);
  for (const auto& [k, v] :
       {std::pair{"span_ns", r.span_ns}, std::pair{"busy_ns", r.busy_ns}, std::pair{"compute_ns", r.compute_ns},
        std::pair{"comm_ns", r.comm_ns}, std::pair{"comm_exposed_ns", r.comm_exposed_ns}})
    j.num(k, v);
  j.str("bound", to_string(r.bound));
  j.num("bytes", r.bytes);
  j.str("strip", r.strip);
  j.begin_array("attention");
  for (const RankAttention& a : r.attention) {
    j.begin_object();
    j.str("impl", to_string(a.impl));
    j.str("pass", to_string(a.pass));
    j.str("kernel", a.kernel);
    j.real("calls", a.calls, 17);
    j.num("ns", a.ns);
    j.end_object();
  }
  j.end_array();
  j.begin_array("findings");
  for (const Finding& f : r.finding_list) {
    j.begin_object();
    j.str("id", f.id);
    j.str("scope", to_string(f.scope));
    j.str("severity", to_string(f.severity));
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return out;
}

RankSummary rank_summary_from_json(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size()).get(doc))
    throw InputError("rank summary: not JSON (a summary comes from attnprof's rank_summary)");
  const auto text = [&](simdjson::dom::element v, const char* k) {
    std::string_view s;
    if (v[k].get(s)) throw InputError(fmt::format("rank summary: no text '{}'", k));
    return std::string(s);
  };
  const auto integer = [&](simdjson::dom::element v, const char* k) {
    std::int64_t n = 0;
    if (v[k].get(n)) throw InputError(fmt::format("rank summary: no integer '{}'", k));
    return n;
  };
  RankSummary r;
  r.path = text(doc, "path");
  r.error = text(doc, "error");
  r.rank = static_cast<int>(integer(doc, "rank"));
  r.rank_from = text(doc, "rank_from");
  r.world_size = static_cast<int>(integer(doc, "world_size"));
  r.backend = text(doc, "backend");
  r.device = text(doc, "device");
  r.region = text(doc, "region");
  r.steps = static_cast<int>(integer(doc, "steps"));
  r.span_ns = integer(doc, "span_ns");
  r.busy_ns = integer(doc, "busy_ns");
  r.compute_ns = integer(doc, "compute_ns");
  r.comm_ns = integer(doc, "comm_ns");
  r.comm_exposed_ns = integer(doc, "comm_exposed_ns");
  r.bound = parse_named<StepBound>(text(doc, "bound"), 7, "step bound");
  r.bytes = static_cast<std::uint64_t>(integer(doc, "bytes"));
  r.strip = text(doc, "strip");
  if (!r.strip.empty() && (r.strip.size() != kStripBins || r.strip.find_first_not_of(".canmCANM") != std::string::npos))
    throw InputError(fmt::format("rank summary: 'strip' is not {} of . c a n m C A N M", kStripBins));
  simdjson::dom::array list;
  if (doc["attention"].get(list)) throw InputError("rank summary: no 'attention' list");
  for (simdjson::dom::element a : list) {
    RankAttention x;
    x.impl = parse_named<AttentionImpl>(text(a, "impl"), 3, "attention implementation");
    x.pass = parse_named<AttentionPass>(text(a, "pass"), 2, "attention pass");
    x.kernel = text(a, "kernel");
    double calls = 0;
    if (a["calls"].get(calls)) throw InputError("rank summary: no number 'calls'");
    x.calls = calls;
    x.ns = integer(a, "ns");
    r.attention.push_back(std::move(x));
  }
  if (doc["findings"].get(list)) throw InputError("rank summary: no 'findings' list");
  for (simdjson::dom::element f : list) {
    Finding x;
    x.id = text(f, "id");
    x.scope = parse_named<Scope>(text(f, "scope"), 2, "finding scope");
    x.severity = parse_named<Severity>(text(f, "severity"), 4, "severity");
    if (std::find(r.findings.begin(), r.findings.end(), x.id) == r.findings.end()) r.findings.push_back(x.id);
    r.finding_list.push_back(std::move(x));
  }
  return r;
}

std::vector<std::string> job_traces(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && (name.ends_with(".json") || name.ends_with(".json.gz")))
      out.push_back(e.path().string());
  }
  if (ec) throw InputError(fmt::format("{}: cannot list the folder: {}", folder, ec.message()));
  if (out.empty()) throw InputError(fmt::format("{}: a folder with no traces in it (.json or .json.gz)", folder));
  std::vector<std::string> ranked;
  std::copy_if(out.begin(), out.end(), std::back_inserter(ranked),
               [](const std::string& p) { return rank_in_name(p).has_value(); });
  if (!ranked.empty()) out = std::move(ranked);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace attnprof
