// Check-and-time harness for the fused attention forward (see fused_harness.h).
#include "fused_harness.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "fused_attention.h"
#include "reference_cpu.h"

namespace attnprof::fused {
namespace {

#define HARNESS_CHECK(call)                                                           \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) return std::string(#call) + ": " + cudaGetErrorString(e_); \
  } while (0)

float round_to(Dtype dt, float x) {
  return dt == Dtype::bf16 ? __bfloat162float(__float2bfloat16(x)) : __half2float(__float2half(x));
}
uint16_t bits_of(Dtype dt, float x) {
  uint16_t u;
  if (dt == Dtype::bf16) {
    __nv_bfloat16 h = __float2bfloat16(x);
    std::memcpy(&u, &h, 2);
  } else {
    __half h = __float2half(x);
    std::memcpy(&u, &h, 2);
  }
  return u;
}
float from_bits(Dtype dt, uint16_t u) {
  if (dt == Dtype::bf16) {
    __nv_bfloat16 h;
    std::memcpy(&h, &u, 2);
    return __bfloat162float(h);
  }
  __half h;
  std::memcpy(&h, &u, 2);
  return __half2float(h);
}

Params make_params(const Case& c) {
  Params p;
  p.batch = c.batch;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.q_len = c.q_len;
  p.kv_len = c.kv_len;
  p.head_dim = c.head_dim;
  p.causal = c.causal;
  p.scale = c.scale;
  p.dtype = c.dtype;
  set_dense_strides(p, c.layout);
  return p;
}

// Device buffers of one case; freed on destruction.
struct Buffers {
  void *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr;
  float* lse = nullptr;
  size_t nq = 0, nkv = 0, nlse = 0;
  ~Buffers() {
    cudaFree(q);
    cudaFree(k);
    cudaFree(v);
    cudaFree(out);
    cudaFree(lse);
  }
  std::string alloc(const Case& c) {
    nq = size_t(c.batch) * c.heads * c.q_len * c.head_dim;
    nkv = size_t(c.batch) * c.kv_heads * c.kv_len * c.head_dim;
    nlse = size_t(c.batch) * c.heads * c.q_len;
    HARNESS_CHECK(cudaMalloc(&q, std::max<size_t>(nq, 1) * 2));
    HARNESS_CHECK(cudaMalloc(&k, std::max<size_t>(nkv, 1) * 2));
    HARNESS_CHECK(cudaMalloc(&v, std::max<size_t>(nkv, 1) * 2));
    HARNESS_CHECK(cudaMalloc(&out, std::max<size_t>(nq, 1) * 2));
    HARNESS_CHECK(cudaMalloc(&lse, std::max<size_t>(nlse, 1) * 4));
    return "";
  }
};

std::string run_check(const Case& c, Path path, unsigned seed, CheckResult& r) {
  Buffers buf;
  std::string err = buf.alloc(c);
  if (!err.empty()) return err;
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  auto fill = [&](size_t n, std::vector<float>& vals, std::vector<uint16_t>& bits) {
    vals.resize(n);
    bits.resize(n);
    for (size_t i = 0; i < n; ++i) {
      vals[i] = round_to(c.dtype, dist(rng));
      bits[i] = bits_of(c.dtype, vals[i]);
    }
  };
  std::vector<float> q, k, v;
  std::vector<uint16_t> qb, kb, vb;
  fill(buf.nq, q, qb);
  fill(buf.nkv, k, kb);
  fill(buf.nkv, v, vb);
  HARNESS_CHECK(cudaMemcpy(buf.q, qb.data(), buf.nq * 2, cudaMemcpyHostToDevice));
  HARNESS_CHECK(cudaMemcpy(buf.k, kb.data(), buf.nkv * 2, cudaMemcpyHostToDevice));
  HARNESS_CHECK(cudaMemcpy(buf.v, vb.data(), buf.nkv * 2, cudaMemcpyHostToDevice));
  HARNESS_CHECK(cudaMemset(buf.out, 0xFF, std::max<size_t>(buf.nq, 1) * 2));  // NaN poison
  HARNESS_CHECK(cudaMemset(buf.lse, 0xFF, std::max<size_t>(buf.nlse, 1) * 4));

  Params p = make_params(c);
  p.q = buf.q;
  p.k = buf.k;
  p.v = buf.v;
  p.out = buf.out;
  p.lse = buf.lse;
  HARNESS_CHECK(forward(p, nullptr, path));
  HARNESS_CHECK(cudaDeviceSynchronize());

  std::vector<uint16_t> ob(buf.nq);
  std::vector<float> lse(buf.nlse);
  HARNESS_CHECK(cudaMemcpy(ob.data(), buf.out, buf.nq * 2, cudaMemcpyDeviceToHost));
  HARNESS_CHECK(cudaMemcpy(lse.data(), buf.lse, buf.nlse * 4, cudaMemcpyDeviceToHost));

  std::vector<double> ref_out, ref_lse;
  reference_forward(p, q.data(), k.data(), v.data(), ref_out, ref_lse);
  double num = 0, den = 0;
  const int D = c.head_dim;
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.heads; ++h)
      for (int i = 0; i < c.q_len; ++i) {
        const size_t row = (size_t(b) * c.heads + h) * c.q_len + i;
        const size_t off = b * p.o_batch_stride + h * p.o_head_stride + i * p.o_seq_stride;
        for (int d = 0; d < D; ++d) {
          const float x = from_bits(c.dtype, ob[off + d]);
          if (std::isnan(x)) {
            ++r.unwritten;
            continue;
          }
          const double diff = x - ref_out[row * D + d];
          num += diff * diff;
          den += ref_out[row * D + d] * ref_out[row * D + d];
        }
        if (std::isnan(lse[row])) {
          ++r.unwritten;
        } else if (std::isinf(ref_lse[row])) {
          if (!(std::isinf(lse[row]) && lse[row] < 0)) r.lse_inf_ok = false;
        } else {
          r.max_lse_err = std::max(r.max_lse_err, std::fabs(lse[row] - ref_lse[row]));
        }
      }
  r.rel_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return "";
}

std::string run_time(const Case& c, Path path, int warmup, int iters, TimeResult& r) {
  Buffers buf;
  std::string err = buf.alloc(c);
  if (!err.empty()) return err;
  // Random bits, not zeros: zeros run faster than real data and hide unwritten outputs.
  std::mt19937 rng(1234);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<uint16_t> host(std::max(buf.nq, buf.nkv));
  for (auto& x : host) x = bits_of(c.dtype, dist(rng));
  HARNESS_CHECK(cudaMemcpy(buf.q, host.data(), buf.nq * 2, cudaMemcpyHostToDevice));
  HARNESS_CHECK(cudaMemcpy(buf.k, host.data(), buf.nkv * 2, cudaMemcpyHostToDevice));
  HARNESS_CHECK(cudaMemcpy(buf.v, host.data(), buf.nkv * 2, cudaMemcpyHostToDevice));
  Params p = make_params(c);
  p.q = buf.q;
  p.k = buf.k;
  p.v = buf.v;
  p.out = buf.out;
  p.lse = buf.lse;
  for (int i = 0; i < warmup; ++i) HARNESS_CHECK(forward(p, nullptr, path));
  HARNESS_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  HARNESS_CHECK(cudaEventCreate(&start));
  HARNESS_CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  // Each sample times kBurst back-to-back launches, so the host's per-launch work
  // (tensor-map encoding) overlaps the previous kernel instead of sitting in the timing.
  constexpr int kBurst = 10;
  for (int i = 0; i < iters; ++i) {
    HARNESS_CHECK(cudaEventRecord(start));
    for (int j = 0; j < kBurst; ++j) HARNESS_CHECK(forward(p, nullptr, path));
    HARNESS_CHECK(cudaEventRecord(stop));
    HARNESS_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    HARNESS_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms / kBurst);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  r.median_ms = times[times.size() / 2];
  r.tflops = forward_flops(p) / (r.median_ms * 1e-3) / 1e12;
  return "";
}

}  // namespace

std::string Case::name() const {
  char s[160];
  std::snprintf(s, sizeof s, "B%d H%d/%d Sq%d Skv%d D%d %s %s %s%s", batch, heads, kv_heads, q_len, kv_len, head_dim,
                causal ? "causal" : "full", dtype == Dtype::bf16 ? "bf16" : "fp16",
                layout == Layout::bhsd ? "bhsd" : "bshd", scale != 0.f ? " scale" : "");
  return s;
}

CheckResult check_case(const Case& c, Path path, unsigned seed) {
  CheckResult r;
  r.error = run_check(c, path, seed, r);
  return r;
}

TimeResult time_case(const Case& c, Path path, int warmup, int iters) {
  TimeResult r;
  r.error = run_time(c, path, warmup, iters, r);
  return r;
}

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

}  // namespace attnprof::fused
