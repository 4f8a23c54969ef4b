// cuDNN's fused scaled-dot-product attention through the cudnn-frontend graph
// API, forward and backward: one graph per shape and pass (dims, strides, dtype,
// mask, scale, paging), built once with heuristics mode A and cached with its
// workspace; each call is one execute(). A forward on a paged cache (params'
// block_table) reads it as cuDNN's paged attention does (cuDNN 9.15 and later).
// The only file that includes cudnn_frontend.h (it is heavy to compile).
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include <cudnn.h>
#include <cudnn_frontend.h>
#include <fmt/core.h>

#include "attention/cuda/cuda_attention.h"
#include "attention/cuda/cuda_check.h"
#include "common/input_error.h"

namespace attnprof::attention::cuda {

namespace fe = cudnn_frontend;

namespace {

#define ATTNPROF_CUDNN_CHECK(call)                                                                      \
  do {                                                                                                  \
    const cudnnStatus_t attnprof_st_ = (call);                                                          \
    if (attnprof_st_ != CUDNN_STATUS_SUCCESS)                                                           \
      throw std::runtime_error(fmt::format("{} failed: {}", #call, cudnnGetErrorString(attnprof_st_))); \
  } while (0)

enum Uid : fe::graph::Tensor_attributes::uid_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kSeed,
  kOffset,
  kDO,
  kDQ,
  kDK,
  kDV,
  kPageTableK,
  kPageTableV,
  kSeqLenQ,
  kSeqLenKv
};

// cuDNN's paged attention (page tables on the SDPA node) came with its unified SDPA node in 9.15.
constexpr std::size_t kPagedCudnnVersion = 91500;

cudnnHandle_t handle() {
  thread_local cudnnHandle_t h = [] {
    cudnnHandle_t created = nullptr;
    ATTNPROF_CUDNN_CHECK(cudnnCreate(&created));
    return created;
  }();
  return h;
}

struct CachedGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  void* workspace = nullptr;
  std::int64_t workspace_bytes = 0;
  std::int64_t* rng = nullptr;  // dropout's seed and offset on the device (dropout > 0 only)
  // A paged graph's sequence lengths, which cuDNN's paged attention needs: q_len for every sequence, and
  // kv_len for every one where params carry no seq_lens.
  int* seq_len_q = nullptr;
  int* seq_len_kv = nullptr;
};

using Key = std::tuple<bool, int, int, int, int, int, int, int, int, int, int, float, bool, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t, int, int, int, bool>;

// The gradients are strided as their forward tensors (AttentionGrads), so the forward's key names
// the backward's graph too.
Key key_of(const AttentionParams& p, int device, bool backward) {
  return {backward,
          device,
          p.batch,
          p.q_heads,
          p.kv_heads,
          p.q_len,
          p.kv_len,
          p.head_dim,
          static_cast<int>(p.dtype),
          p.causal ? 1 + static_cast<int>(p.causal_align) : 0,
          static_cast<int>(p.dropout * 1e6f),
          p.scale,
          p.lse != nullptr,
          p.q_strides.batch,
          p.q_strides.head,
          p.q_strides.row,
          p.k_strides.batch,
          p.k_strides.head,
          p.k_strides.row,
          p.v_strides.batch,
          p.v_strides.head,
          p.v_strides.row,
          p.out_strides.batch,
          p.out_strides.head,
          p.out_strides.row,
          p.block_table ? p.page_size : 0,
          p.block_table ? p.block_table_stride : 0,
          p.block_table ? p.kv_pages : 0,
          p.block_table && p.seq_lens};
}

std::vector<std::int64_t> strides4(const TensorStrides& s) { return {s.batch, s.head, s.row, 1}; }

void check(fe::error_t err, const char* step, const AttentionParams& p) {
  if (err.is_good()) return;
  throw InputError(fmt::format("cudnn: {} refused {} b={} h={} kv_h={} s={} s_kv={} d={}: {}", step,
                               dtype_name(p.dtype), p.batch, p.q_heads, p.kv_heads, p.q_len, p.kv_len, p.head_dim,
                               err.get_message()));
}

// What the forward and the backward graph share: the types, the [batch, heads, len, head_dim]
// tensors, the mask, the scale and the dropout's seed and offset.
struct GraphStart {
  std::shared_ptr<fe::graph::Graph> g = std::make_shared<fe::graph::Graph>();
  const AttentionParams& p;
  explicit GraphStart(const AttentionParams& params) : p(params) {
    g->set_io_data_type(p.dtype == DType::BF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
  }
  std::shared_ptr<fe::graph::Tensor_attributes> tensor(const char* name, Uid uid, int heads, int len,
                                                       const TensorStrides& s, int outer = 0) {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim({outer > 0 ? outer : p.batch, heads, len, p.head_dim})
                         .set_stride(strides4(s)));
  }
  std::shared_ptr<fe::graph::Tensor_attributes> q() { return tensor("Q", kQ, p.q_heads, p.q_len, p.q_strides); }
  // K and V, or a paged cache's pools as cuDNN's paged attention reads them: [pages, kv_heads, page_size,
  // head_dim] by the params' strides (k_strides.batch between pages), whatever order the pool's axes are in.
  std::shared_ptr<fe::graph::Tensor_attributes> k() { return kv("K", kK, p.k_strides); }
  std::shared_ptr<fe::graph::Tensor_attributes> v() { return kv("V", kV, p.v_strides); }
  std::shared_ptr<fe::graph::Tensor_attributes> kv(const char* name, Uid uid, const TensorStrides& s) {
    return p.block_table ? tensor(name, uid, p.kv_heads, p.page_size, s, p.kv_pages)
                         : tensor(name, uid, p.kv_heads, p.kv_len, s);
  }
  // The page tables (one block table for K and V: [batch, 1, pages per sequence, 1]) and the sequence
  // lengths cuDNN's paged attention needs, with its padding mask (build() makes the lengths the params do
  // not carry once the graph is built).
  void paged(fe::graph::SDPA_attributes& options) {
    if (p.kv_pages <= 0) throw InputError("cudnn: a paged cache needs its pool's page count (params.kv_pages)");
    auto int32 = [&](const char* name, Uid uid, std::vector<std::int64_t> dim, std::vector<std::int64_t> stride) {
      return g->tensor(fe::graph::Tensor_attributes()
                           .set_name(name)
                           .set_uid(uid)
                           .set_dim(std::move(dim))
                           .set_stride(std::move(stride))
                           .set_data_type(fe::DataType_t::INT32));
    };
    const std::int64_t n = p.block_table_stride;
    options.set_paged_attention_k_table(int32("PageTableK", kPageTableK, {p.batch, 1, n, 1}, {n, n, 1, 1}))
        .set_paged_attention_v_table(int32("PageTableV", kPageTableV, {p.batch, 1, n, 1}, {n, n, 1, 1}))
        .set_paged_attention_max_seq_len_kv(p.kv_len)
        .set_padding_mask(true)
        .set_seq_len_q(int32("SeqLenQ", kSeqLenQ, {p.batch, 1, 1, 1}, {1, 1, 1, 1}))
        .set_seq_len_kv(int32("SeqLenKv", kSeqLenKv, {p.batch, 1, 1, 1}, {1, 1, 1, 1}));
  }
  std::vector<std::int64_t> stats_dim() const { return {p.batch, p.q_heads, p.q_len, 1}; }
  std::vector<std::int64_t> stats_stride() const {
    return {static_cast<std::int64_t>(p.q_heads) * p.q_len, p.q_len, 1, 1};
  }
  // Mask, scale and dropout on either pass's attributes.
  template <typename Options>
  void common(Options& options) {
    options.set_attn_scale(p.scale);
    if (p.causal) {
      if (p.causal_align == CausalAlign::TopLeft)
        options.set_causal_mask(true);
      else
        options.set_causal_mask_bottom_right(true);
    }
    if (p.dropout > 0.0f) {  // Philox dropout from a seed and an offset, as PyTorch passes them
      auto scalar = [&](const char* name, Uid uid) {
        return g->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_dim({1, 1, 1, 1})
                             .set_stride({1, 1, 1, 1})
                             .set_data_type(fe::DataType_t::INT64));
      };
      options.set_dropout(p.dropout, scalar("Seed", kSeed), scalar("Offset", kOffset));
    }
  }
};

CachedGraph build(const AttentionParams& p, bool backward) {
  GraphStart start(p);
  auto& g = start.g;
  if (!backward) {
    auto options = fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(p.lse != nullptr);
    start.common(options);
    if (p.block_table) start.paged(options);
    auto [o, stats] = g->sdpa(start.q(), start.k(), start.v(), options);
    o->set_output(true)
        .set_uid(kO)
        .set_dim({p.batch, p.q_heads, p.q_len, p.head_dim})
        .set_stride(strides4(p.out_strides));
    if (p.lse) {
      stats->set_output(true)
          .set_uid(kStats)
          .set_data_type(fe::DataType_t::FLOAT)
          .set_dim(start.stats_dim())
          .set_stride(start.stats_stride());
    }
  } else {
    auto options = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward");
    start.common(options);
    auto o = start.tensor("O", kO, p.q_heads, p.q_len, p.out_strides);
    auto d_o = start.tensor("dO", kDO, p.q_heads, p.q_len, p.out_strides);
    auto stats = g->tensor(fe::graph::Tensor_attributes()
                               .set_name("Stats")
                               .set_uid(kStats)
                               .set_dim(start.stats_dim())
                               .set_stride(start.stats_stride())
                               .set_data_type(fe::DataType_t::FLOAT));
    auto [dq, dk, dv] = g->sdpa_backward(start.q(), start.k(), start.v(), o, d_o, stats, options);
    dq->set_output(true)
        .set_uid(kDQ)
        .set_dim({p.batch, p.q_heads, p.q_len, p.head_dim})
        .set_stride(strides4(p.q_strides));
    dk->set_output(true)
        .set_uid(kDK)
        .set_dim({p.batch, p.kv_heads, p.kv_len, p.head_dim})
        .set_stride(strides4(p.k_strides));
    dv->set_output(true)
        .set_uid(kDV)
        .set_dim({p.batch, p.kv_heads, p.kv_len, p.head_dim})
        .set_stride(strides4(p.v_strides));
  }
  cudnnHandle_t h = handle();
  check(g->validate(), "validate", p);
  check(g->build_operation_graph(h), "build_operation_graph", p);
  check(g->create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans", p);
  check(g->check_support(h), "check_support", p);
  check(g->build_plans(h), "build_plans", p);
  CachedGraph cached;
  cached.graph = g;
  check(g->get_workspace_size(cached.workspace_bytes), "get_workspace_size", p);
  if (cached.workspace_bytes > 0)
    ATTNPROF_CUDA_CHECK(cudaMalloc(&cached.workspace, static_cast<std::size_t>(cached.workspace_bytes)));
  if (p.block_table) {  // every sequence's q_len, and its kv_len where the params carry no seq_lens
    const auto lengths = [&](int len) {
      const std::vector<int> host(static_cast<std::size_t>(p.batch), len);
      int* dev = nullptr;
      ATTNPROF_CUDA_CHECK(cudaMalloc(&dev, host.size() * sizeof(int)));
      ATTNPROF_CUDA_CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice));
      return dev;
    };
    cached.seq_len_q = lengths(p.q_len);
    if (!p.seq_lens) cached.seq_len_kv = lengths(p.kv_len);
  }
  if (p.dropout > 0.0f) {
    const std::int64_t seed_offset[2] = {0x5eed, 0};
    ATTNPROF_CUDA_CHECK(cudaMalloc(&cached.rng, sizeof(seed_offset)));
    ATTNPROF_CUDA_CHECK(cudaMemcpy(cached.rng, seed_offset, sizeof(seed_offset), cudaMemcpyHostToDevice));
  }
  return cached;
}

}  // namespace

bool cudnn_reads_paged_kv() { return cudnnGetVersion() >= kPagedCudnnVersion; }

std::string cudnn_unavailable_reason() {
  const std::size_t version = cudnnGetVersion();
  if (version < 90000) return fmt::format("cuDNN {} is older than 9.0, which fused SDPA needs", version);
  return {};
}

namespace {

// cuDNN refuses bottom-right causal with q longer than kv. The first
// q_len - kv_len query rows see no key (zeros); the rest are a square problem
// where bottom-right and top-left coincide. So: zero those rows, run the rest.
bool run_sliced_bottom_right(const AttentionParams& p, const ExecContext& ctx) {
  if (!(p.causal && p.causal_align == CausalAlign::BottomRight && p.q_len > p.kv_len)) return false;
  if (p.lse) throw InputError("cudnn: bottom-right causal with q longer than kv and lse is not supported");
  const int hidden = p.q_len - p.kv_len;
  const auto e = static_cast<std::int64_t>(dtype_bytes(p.dtype));
  const auto& s = p.out_strides;
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (s.row == p.head_dim && s.batch == static_cast<std::int64_t>(p.q_heads) * s.head) {  // BHSD-like
    ATTNPROF_CUDA_CHECK(cudaMemset2DAsync(p.out, static_cast<std::size_t>(s.head * e), 0,
                                          static_cast<std::size_t>(hidden * s.row * e),
                                          static_cast<std::size_t>(p.batch) * p.q_heads, stream));
  } else if (s.head == p.head_dim && s.row == static_cast<std::int64_t>(p.q_heads) * p.head_dim) {  // BSHD-like
    ATTNPROF_CUDA_CHECK(cudaMemset2DAsync(p.out, static_cast<std::size_t>(s.batch * e), 0,
                                          static_cast<std::size_t>(hidden * s.row * e),
                                          static_cast<std::size_t>(p.batch), stream));
  } else {
    throw InputError("cudnn: bottom-right causal with q longer than kv needs a BHSD or BSHD output");
  }
  AttentionParams rest = p;
  rest.q = static_cast<const char*>(p.q) + hidden * p.q_strides.row * e;
  rest.out = static_cast<char*>(p.out) + hidden * s.row * e;
  rest.q_len = p.kv_len;
  rest.causal_align = CausalAlign::TopLeft;
  cudnn(rest, ctx);
  return true;
}

// The cached graph of p's shape and pass, built on first use.
CachedGraph& graph_for(const AttentionParams& p, bool backward) {
  static std::mutex mutex;
  static std::map<Key, CachedGraph> cache;  // graphs live as long as the process
  int device = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  const Key key = key_of(p, device, backward);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, build(p, backward)).first;
  return it->second;
}

using Pack = std::unordered_map<fe::graph::Tensor_attributes::uid_t, void*>;

void execute(CachedGraph& entry, Pack pack, const ExecContext& ctx) {
  cudnnHandle_t h = handle();
  ATTNPROF_CUDNN_CHECK(cudnnSetStream(h, static_cast<cudaStream_t>(ctx.stream)));
  if (entry.rng) {
    pack[kSeed] = entry.rng;
    pack[kOffset] = entry.rng + 1;
  }
  if (entry.seq_len_q) {
    pack[kSeqLenQ] = entry.seq_len_q;
    if (entry.seq_len_kv) pack[kSeqLenKv] = entry.seq_len_kv;
  }
  auto err = entry.graph->execute(h, pack, entry.workspace);
  if (!err.is_good()) throw std::runtime_error(fmt::format("cudnn: execute failed: {}", err.get_message()));
}

}  // namespace

void cudnn(const AttentionParams& p, const ExecContext& ctx) {
  validate(p);
  if (p.dtype == DType::FP32) throw InputError("cudnn: cuDNN's fused attention takes bf16 or fp16, not fp32");
  if (p.block_table && !cudnn_reads_paged_kv())
    throw InputError(fmt::format("cudnn: cuDNN {} reads no paged cache (its paged attention needs {})",
                                 cudnnGetVersion(), kPagedCudnnVersion));
  if (run_sliced_bottom_right(p, ctx)) return;
  Pack pack = {{kQ, const_cast<void*>(p.q)}, {kK, const_cast<void*>(p.k)}, {kV, const_cast<void*>(p.v)}, {kO, p.out}};
  if (p.lse) pack[kStats] = p.lse;
  if (p.block_table) {
    pack[kPageTableK] = pack[kPageTableV] = const_cast<int*>(p.block_table);
    if (p.seq_lens) pack[kSeqLenKv] = const_cast<int*>(p.seq_lens);
  }
  execute(graph_for(p, false), std::move(pack), ctx);
}

void cudnn_backward(const AttentionParams& p, const AttentionGrads& g, const ExecContext& ctx) {
  validate(p);
  if (p.dtype == DType::FP32) throw InputError("cudnn: cuDNN's fused attention takes bf16 or fp16, not fp32");
  if (p.causal && p.causal_align == CausalAlign::BottomRight && p.q_len > p.kv_len)
    throw InputError("cudnn: the backward of bottom-right causal with q longer than kv is not supported");
  if (p.lse == nullptr) throw InputError("cudnn: the backward needs the forward's lse (softmax stats)");
  if (p.block_table) throw InputError("cudnn: the backward reads dense K and V, not a paged cache");
  Pack pack = {{kQ, const_cast<void*>(p.q)},
               {kK, const_cast<void*>(p.k)},
               {kV, const_cast<void*>(p.v)},
               {kO, p.out},
               {kDO, const_cast<void*>(g.d_out)},
               {kStats, p.lse},
               {kDQ, g.dq},
               {kDK, g.dk},
               {kDV, g.dv}};
  execute(graph_for(p, true), std::move(pack), ctx);
}

}  // namespace attnprof::attention::cuda
