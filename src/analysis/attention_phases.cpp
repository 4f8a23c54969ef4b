// Labels the phases of an inference trace's attention calls (attention_phases.h).
#include "analysis/attention_phases.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "analysis/kernel_classifier.h"
#include "common/text_search.h"

namespace attnprof {
namespace {

class PhaseLabeller {
 public:
  PhaseLabeller(const TraceIndex& index, AttentionView& view) : index_(index), t_(index.trace()), view_(view) {
    for (const DeviceProperties& d : t_.devices) sms_ = std::max<std::int64_t>(sms_, d.num_sms);
    mains_.reserve(view.calls.size());
    for (const AttentionCall& c : view.calls) {
      std::optional<std::size_t> main;
      for (std::size_t a : c.activities)
        if (!main && cls(a).category == KernelCategory::FusedAttention && fused_role(name(a)) == FusedRole::Main)
          main = a;
      mains_.push_back(main);
    }
  }

  void run() {
    const auto decodes = [](const AttentionCall& c) {
      return c.shape.any() && c.shape.q_len > 0 && c.shape.q_len <= kDecodeMaxQueryRows &&
             c.shape.kv_len > c.shape.q_len;
    };
    // A packed forward (one sequence of batch 1 holding several requests' tokens, a mask of one head
    // keeping them apart: continuous batching's) with more query rows than a decode has that reads keys
    // beyond its own queries (cached ones): its rows may be one token of each of many requests, a prompt's
    // chunk, or both; the shape does not say how many sequences it holds. One without cached keys (keys
    // as many as queries) is a prefill of fresh prompts.
    const auto mixed = [](const AttentionCall& c) {
      return c.shape.any() && c.shape.batch == 1 && c.shape.one_head_mask && c.shape.q_len > kDecodeMaxQueryRows &&
             c.shape.kv_len > c.shape.q_len;
    };
    const auto cached = [&](const AttentionCall& c) { return decodes(c) || mixed(c); };
    // What the main kernel's name says: a serving engine's its phase (decode and context kernels apart),
    // cuDNN's its tile.
    const auto named = [this](const AttentionCall& c) {
      const auto main = main_kernel(c);
      return main ? read_attention_kernel_name(name(*main)) : AttentionKernelName{};
    };
    const auto said = [&named](const AttentionCall& c) { return named(c).phase; };
    // A shape with its lengths (not a decode kernel's, which holds no key length).
    const auto sized = [](const AttentionCall& c) { return c.shape.any() && c.shape.q_len > 0 && c.shape.kv_len > 0; };
    // cuDNN's tile of at most 16 query rows: its decode kernel where the trace also runs cuDNN with a longer
    // tile (the prefill's), which a program of short sequences alone (an encoder of 12 tokens) does not.
    bool cudnn_long_tile = false;
    for (const AttentionCall& c : view_.calls)
      cudnn_long_tile |= c.impl == AttentionImpl::Fused && c.pass == AttentionPass::Forward && named(c).tile_rows > 16;
    std::vector<StringId> decode_kernels;  // the main kernels of fused calls that decode (split-KV, a short tile)
    const auto decode_kernel = [&](StringId k) {
      if (std::find(decode_kernels.begin(), decode_kernels.end(), k) == decode_kernels.end())
        decode_kernels.push_back(k);
    };
    bool any_decode = false;
    for (const AttentionCall& c : view_.calls) {
      if (c.pass == AttentionPass::Backward) return;
      any_decode |= cached(c);
      if (c.impl != AttentionImpl::Fused || sized(c)) continue;
      const AttentionKernelName kernel = named(c);
      if (kernel.phase == KernelPhase::Decode) {  // an engine's decode kernel (vLLM's v1: no combine)
        any_decode = true;
        decode_kernel(event(*main_kernel(c)).name);
      }
      if (kernel.tile_rows > 0 && kernel.tile_rows <= 16 && cudnn_long_tile) {
        any_decode = true;
        decode_kernel(event(*main_kernel(c)).name);
      }
      const auto main = main_kernel(c);
      const bool combines = std::any_of(c.activities.begin(), c.activities.end(),
                                        [&](std::size_t a) { return fused_role(name(a)) == FusedRole::After; });
      if (combines && main) {
        any_decode = true;
        decode_kernel(event(*main).name);
      }
    }
    // One kernel for both phases (cuDNN's flash forward on continuous batching's packed forwards, recorded):
    // calls that read long keys with few query rows, told by their launches and times.
    std::vector<bool> decode_by_launch = short_queries_long_keys(sized, decode_kernels);
    const std::vector<GatheredKeys> gathered = gathered_keys(sized);
    for (std::size_t i = 0; i < gathered.size(); ++i)
      decode_by_launch[i] = decode_by_launch[i] || gathered[i] == GatheredKeys::Decode;
    const bool timed_decode =
        std::find(decode_by_launch.begin(), decode_by_launch.end(), true) != decode_by_launch.end();
    any_decode |= timed_decode;
    if (!any_decode) return;
    // The longest KV cache a decode call reads: a call with an explicit one-head mask whose keys a
    // decode call extends (reads more of them) is a decoder's prefill whatever its is_causal says
    // (transformers' continuous batching passes its causal mask so).
    std::int64_t longest_decode_kv = 0;
    for (const AttentionCall& c : view_.calls)
      if (cached(c)) longest_decode_kv = std::max(longest_decode_kv, c.shape.kv_len);
    for (std::size_t i = 0; i < view_.calls.size(); ++i) {
      AttentionCall& c = view_.calls[i];
      if (sized(c)) {
        // A call known not to be causal with more query rows is an encoder's (an encoder-decoder's
        // generate()): no phase.
        const bool masked_prefill = c.shape.one_head_mask && longest_decode_kv > c.shape.kv_len;
        const bool encoder = !cached(c) && c.shape.causal.has_value() && !*c.shape.causal && !masked_prefill;
        if (!encoder)
          c.phase = decodes(c) ? AttentionPhase::Decode : mixed(c) ? AttentionPhase::Mixed : AttentionPhase::Prefill;
        continue;
      }
      if (c.impl != AttentionImpl::Fused) continue;
      if (const KernelPhase p = said(c); p != KernelPhase::Unknown) {
        c.phase = p == KernelPhase::Decode ? AttentionPhase::Decode : AttentionPhase::Prefill;
        continue;
      }
      if (decode_by_launch[i]) {
        c.phase = AttentionPhase::Decode;
        continue;
      }
      if (decode_kernels.empty() && !timed_decode) continue;
      bool same = false;
      for (std::size_t a : c.activities)
        same |= std::find(decode_kernels.begin(), decode_kernels.end(), event(a).name) != decode_kernels.end();
      if (same)
        c.phase = AttentionPhase::Decode;
      else if (gathered[i] != GatheredKeys::Read)  // reading a gathered cache, it is no prefill of fresh prompts
        c.phase = AttentionPhase::Prefill;
    }
  }
  // Per call, whether it decodes by its launch and time, for a forward kernel that launches a CTA a query
  // tile of each head and sequence (up to the SMs: a persistent kernel's CTAs take the tiles in turn) and
  // whose CTA's time grows with the keys it reads. Among the calls of one main kernel that nothing else
  // tells the phase of (no shape, no decode name, no combine) whose largest calls run in one wave (fewer
  // CTAs than SMs: the call lasts as long as its longest tile), a call with at most a kPrefillCtas-th of
  // their CTAs that still runs kLongKeys of their median time reads in each of its few query tiles about as
  // many keys as the largest calls' longest tile: short queries against a long cache. A smaller batch's
  // prefill in one wave looks the same from its launch; decode calls outnumber the largest calls (a
  // decode forward a token after each prefill), a tail batch's do not. Where the largest calls take more
  // than a wave (a long prefill over many heads), a tile's time is not known and the calls keep no phase.
  std::vector<bool> short_queries_long_keys(const auto& sized, const std::vector<StringId>& decode_kernels) {
    constexpr std::int64_t kPrefillCtas = 4;
    constexpr double kLongKeys = 0.7;
    std::vector<bool> decode(view_.calls.size(), false);
    struct Launch {
      std::size_t call;
      std::int64_t ctas;
      std::int64_t ns;
    };
    std::vector<std::pair<StringId, std::vector<Launch>>> kernels;
    for (std::size_t i = 0; i < view_.calls.size(); ++i) {
      const AttentionCall& c = view_.calls[i];
      if (c.impl != AttentionImpl::Fused || c.pass != AttentionPass::Forward || sized(c)) continue;
      const auto main = main_kernel(c);
      if (!main) continue;
      const Event& e = event(*main);
      const GpuArgs* args = t_.args(e);
      if (args == nullptr || args->grid[0] <= 0 || args->grid[1] <= 0 || args->grid[2] <= 0) continue;
      if (std::find(decode_kernels.begin(), decode_kernels.end(), e.name) != decode_kernels.end()) continue;
      const AttentionKernelName said = read_attention_kernel_name(name(*main));
      if (said.phase != KernelPhase::Unknown || (said.tile_rows > 0 && said.tile_rows <= 16)) continue;
      auto k = std::find_if(kernels.begin(), kernels.end(), [&](const auto& p) { return p.first == e.name; });
      if (k == kernels.end()) k = kernels.insert(kernels.end(), {e.name, {}});
      const std::int64_t ctas = std::int64_t{args->grid[0]} * args->grid[1] * args->grid[2];
      k->second.push_back({i, ctas, e.dur_ns});
    }
    for (auto& [kernel, launches] : kernels) {
      std::int64_t most = 0;
      for (const Launch& l : launches) most = std::max(most, l.ctas);
      if (sms_ <= 0 || most >= sms_) continue;
      std::vector<std::int64_t> largest;
      for (const Launch& l : launches)
        if (l.ctas == most) largest.push_back(l.ns);
      std::nth_element(largest.begin(), largest.begin() + static_cast<std::ptrdiff_t>(largest.size() / 2),
                       largest.end());
      const double median = static_cast<double>(largest[largest.size() / 2]);
      std::vector<std::size_t> shorts;
      for (const Launch& l : launches)
        if (l.ctas * kPrefillCtas <= most && static_cast<double>(l.ns) >= kLongKeys * median) shorts.push_back(l.call);
      if (shorts.size() <= largest.size()) continue;
      for (std::size_t i : shorts) decode[i] = true;
    }
    return decode;
  }
  // What a fused forward's keys say where they were gathered just before it (paged SDPA gathers the pool
  // dense before each call that reads cached keys), from PyTorch's gather kernel (index_select's
  // `vectorized_gather_kernel`, a block row per index: grid.x is the tokens gathered) on the call's stream
  // since the previous attention call. Such a call reads a cache; it decodes where its one wave of CTAs
  // holds fewer query rows in all than the tokens gathered (a CTA's rows taken at most its threads or its
  // name's tile: cuDNN's 64x128 knob runs 128 rows on 384 threads). Where it holds more (or runs more than
  // a wave) it may be a prompt's chunk beside decode tokens: its phase stays untold, never a prefill. The
  // bound cannot tell a decode from a short chunk that fits (mixed), as the launch-time rule cannot either.
  enum class GatheredKeys : std::uint8_t { None, Read, Decode };
  std::vector<GatheredKeys> gathered_keys(const auto& sized) {
    constexpr std::size_t kReach = 16;  // launches back from the call (repeat_kv's copies, a mask's)
    std::vector<GatheredKeys> out(view_.calls.size(), GatheredKeys::None);
    const auto stream = [&](std::size_t a) {
      const GpuArgs* g = t_.args(event(a));
      return g != nullptr ? g->stream : -1;
    };
    std::size_t floor = 0;  // the activity after the previous call's last
    for (std::size_t i = 0; i < view_.calls.size(); ++i) {
      const AttentionCall& c = view_.calls[i];
      const std::size_t first = c.activities.front(), from = floor;
      floor = std::max(floor, c.activities.back() + 1);
      if (c.impl != AttentionImpl::Fused || c.pass != AttentionPass::Forward || sized(c)) continue;
      const auto main = main_kernel(c);
      if (!main) continue;
      const GpuArgs* gather = nullptr;
      for (std::size_t a = first; a > from && first - a < kReach && gather == nullptr; --a)
        if (event(a - 1).kind == EventKind::Kernel && stream(a - 1) == stream(first) &&
            has(name(a - 1), "vectorized_gather_kernel"))
          gather = t_.args(event(a - 1));
      if (gather == nullptr) continue;
      out[i] = GatheredKeys::Read;
      const GpuArgs* args = t_.args(event(*main));
      const AttentionKernelName said = read_attention_kernel_name(name(*main));
      if (args == nullptr || sms_ <= 0) continue;
      const std::int64_t ctas = std::int64_t{args->grid[0]} * args->grid[1] * args->grid[2];
      const std::int64_t threads = std::int64_t{args->block[0]} * args->block[1] * args->block[2];
      const std::int64_t rows = std::max<std::int64_t>(said.tile_rows, threads);
      if (ctas > 0 && ctas < sms_ && rows > 0 && args->block[0] > 0 && ctas * rows < std::int64_t{gather->grid[0]})
        out[i] = GatheredKeys::Decode;
    }
    return out;
  }

 private:
  const KernelClass& cls(std::size_t i) const { return index_.activities()[i].cls; }
  const Event& event(std::size_t i) const { return index_.event(index_.activities()[i]); }
  std::string_view name(std::size_t i) const { return t_.name(event(i)); }
  // The main fused kernel of call c, one of view_.calls (its first fused kernel that is no helper), else none.
  std::optional<std::size_t> main_kernel(const AttentionCall& c) const {
    return mains_[static_cast<std::size_t>(&c - view_.calls.data())];
  }

  const TraceIndex& index_;
  const Trace& t_;
  AttentionView& view_;
  std::vector<std::optional<std::size_t>> mains_;  // main_kernel of each call, by its index
  std::int64_t sms_ = 0;                           // the GPU's, where the trace says it (one GPU per trace here)
};

}  // namespace

void label_phases(const TraceIndex& index, AttentionView& view) { PhaseLabeller(index, view).run(); }

}  // namespace attnprof
