// Every CUDA implementation against the fp64 reference on odd shapes (lengths
// 1, 17, 1000, 2049; q/kv lengths that differ; GQA/MQA; causal both ways; D 64
// and 128; BSHD), fresh random inputs and a NaN-poisoned output each time, forward
// and backward; the fused backward against cuDNN's error on FlashAttention's length
// pairs, on both of its kernels (bwd_sm80.cu, and bwd_sm90.cu on sm_90 devices, also against the
// other). Skips without a CUDA device. Label: gpu.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "attention/cpu/backward_check.h"
#include "attention/cpu/check.h"
#include "attention/cuda/cuda_attention.h"
#include "attention/cuda/device_inputs.h"
#include "attention/host_inputs.h"
#include "attention_test_data.h"
#include "bench/cuda_backend.h"
#include "bench/implementations.h"
#include "common/input_error.h"

namespace attnprof::attention {
namespace {

using testing::Shape;

// The implementations under test: the CUDA registry's rows (attnprof bench runs the same).
std::vector<bench::Implementation> implementations() { return bench::plugin::implementations(); }

void check_cuda(cudaError_t err, const char* what) {
  ASSERT_EQ(err, cudaSuccess) << what << ": " << cudaGetErrorString(err);
}

struct DeviceCopy {
  void* ptr = nullptr;
  explicit DeviceCopy(const std::vector<std::uint8_t>& host) {
    check_cuda(cudaMalloc(&ptr, host.size()), "cudaMalloc");
    check_cuda(cudaMemcpy(ptr, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  explicit DeviceCopy(std::size_t bytes) { check_cuda(cudaMalloc(&ptr, bytes ? bytes : 1), "cudaMalloc"); }
  ~DeviceCopy() { cudaFree(ptr); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
};

class CudaAttention : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << why;
  }
};

TEST_P(CudaAttention, MatchesFp64Reference) {
  const Shape s = GetParam();
  unsigned seed = 4321;
  for (const bench::Implementation& impl : implementations()) {
    if (!impl.takes_fp32 && s.dtype == DType::FP32) continue;
    if (!impl.unavailable.empty()) continue;                    // cudnn without cuDNN
    auto host = testing::make_host_attention(s, seed++);        // fresh inputs for each implementation
    DeviceCopy q(host.q), k(host.k), v(host.v), out(host.out);  // out starts as NaN poison
    AttentionParams p = host.params;
    p.q = q.ptr;
    p.k = k.ptr;
    p.v = v.ptr;
    p.out = out.ptr;
    const std::size_t ws_bytes = impl.workspace ? impl.workspace(p) : 0;
    DeviceCopy ws(ws_bytes);
    try {
      impl.run(p, {nullptr, ws.ptr, ws_bytes});
    } catch (const InputError& e) {
      if (impl.takes_every_shape) ADD_FAILURE() << impl.name << " refused the shape: " << e.what();
      continue;
    }
    check_cuda(cudaDeviceSynchronize(), impl.name.c_str());
    check_cuda(cudaMemcpy(host.out.data(), out.ptr, host.out.size(), cudaMemcpyDeviceToHost), "copy back");
    const auto check = cpu::check_against_reference(host.params, host.out.data());
    EXPECT_LT(check.rel_error, cpu::tolerance(s.dtype)) << impl.name;
  }
}

// The rows that read a paged cache (`bench --page-size`: fused, and cudnn through cuDNN's paged attention
// where cuDNN is 9.15 or later) on decode and short-prefill shapes, the keys in pages of 16, 64 and 256
// tokens in shuffled order, against the fp64 reference of the same keys dense. A row that takes paged
// caches must not refuse one. The fused kernel's cache has NaN in every slot no sequence owns; cuDNN's has
// zeros there, as a zero-initialized pool would: with bottom-right causal, cuDNN 9.19 reads the slots after a
// sequence's last key in its last page and a NaN there poisons its rows (0 x NaN; H100, 2026-12-07: every
// causal case here, none of the unmasked ones).
TEST(CudaAttentionPaged, PagedRowsMatchFp64Reference) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << why;
  const std::vector<Shape> shapes = {
      {3, 8, 2, 1, 1000, 128, false},                                                        // GQA decode
      {2, 8, 1, 1, 4096, 128, false},                                                        // MQA, long keys
      {2, 4, 4, 4, 300, 64, true, CausalAlign::BottomRight, DType::FP16},                    // speculative, MHA
      {1, 16, 2, 16, 2049, 128, true, CausalAlign::BottomRight, DType::BF16, Layout::BSHD},  // a chunk of prefill
  };
  int rows = 0;
  unsigned seed = 97;
  for (const bench::Implementation& impl : implementations()) {
    if (!impl.takes_paged_kv || !impl.unavailable.empty()) continue;
    ++rows;
    for (const Shape& s : shapes)
      for (const int page_size : {16, 64, 256}) {
        SCOPED_TRACE(fmt::format("{} {} pages of {}", impl.name, testing::shape_name(s), page_size));
        auto host = testing::make_host_attention(s, seed++);
        HostKvCache cache = make_kv_cache(host, page_size, std::vector<int>(std::size_t(s.batch), s.kv_len), seed++);
        if (!impl.name.starts_with("fused"))
          for (std::vector<std::uint8_t>* pool : {&cache.k, &cache.v})
            for (std::size_t e = 0; e + 1 < pool->size(); e += 2)  // bf16 and fp16 NaN: 0xffff
              if ((*pool)[e] == 0xff && (*pool)[e + 1] == 0xff) (*pool)[e] = (*pool)[e + 1] = 0;
        const cuda::DeviceKvCache dev_cache = cuda::upload(cache);
        DeviceCopy q(host.q), out(host.out);  // out starts as NaN poison
        AttentionParams p = host.params;
        p.q = q.ptr;
        p.out = out.ptr;
        p = cuda::with_kv_cache(p, cache, dev_cache);
        const std::size_t ws_bytes = impl.workspace ? impl.workspace(p) : 0;
        DeviceCopy ws(ws_bytes);
        try {
          impl.run(p, {nullptr, ws.ptr, ws_bytes});
        } catch (const InputError& e) {
          ADD_FAILURE() << impl.name << " refused the paged cache: " << e.what();
          continue;
        }
        check_cuda(cudaDeviceSynchronize(), impl.name.c_str());
        check_cuda(cudaMemcpy(host.out.data(), out.ptr, host.out.size(), cudaMemcpyDeviceToHost), "copy back");
        const auto check = cpu::check_against_reference(host.params, host.out.data());
        EXPECT_LT(check.rel_error, cpu::tolerance(s.dtype));
      }
  }
  EXPECT_GE(rows, 1) << "no row reads a paged cache";
}

// One registry row's forward (with an lse, which cuDNN's backward reads), then its backward, on the
// inputs of `seed`, against the fp64 reference gradients; nullopt when the row refused the shape
// (`refusal` then says why).
std::optional<cpu::BackwardCheckResult> run_backward(const bench::Implementation& impl, const Shape& s, unsigned seed,
                                                     std::string& refusal, int max_groups = 0) {
  auto host = testing::make_host_attention(s, seed);
  const auto d_out_host = random_like_out(host.params, seed + 1);
  DeviceCopy q(host.q), k(host.k), v(host.v), out(host.out), d_out(d_out_host);
  DeviceCopy lse(static_cast<std::size_t>(s.batch) * s.heads * s.q_len * sizeof(float));
  std::vector<std::uint8_t> dq_host(host.q.size(), 0xff), dk_host(host.k.size(), 0xff), dv_host(host.v.size(), 0xff);
  DeviceCopy dq(dq_host), dk(dk_host), dv(dv_host);  // NaN poison
  AttentionParams p = host.params;
  p.q = q.ptr;
  p.k = k.ptr;
  p.v = v.ptr;
  p.out = out.ptr;
  p.lse = static_cast<float*>(lse.ptr);
  const std::size_t ws_bytes =
      std::max(impl.workspace ? impl.workspace(p) : 0, impl.backward_workspace ? impl.backward_workspace(p) : 0);
  DeviceCopy ws(ws_bytes);
  const ExecContext ctx{nullptr, ws.ptr, ws_bytes};
  try {
    impl.run(p, ctx);
    impl.backward(p, {d_out.ptr, dq.ptr, dk.ptr, dv.ptr}, ctx);
  } catch (const InputError& e) {
    refusal = e.what();
    return std::nullopt;
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << impl.name;
  EXPECT_EQ(cudaMemcpy(dq_host.data(), dq.ptr, dq_host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dk_host.data(), dk.ptr, dk_host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dv_host.data(), dv.ptr, dv_host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  return cpu::check_backward_against_reference(host.params, d_out_host.data(), dq_host.data(), dk_host.data(),
                                               dv_host.data(), max_groups);
}

// Every registry row with a backward against the fp64 reference gradients.
TEST_P(CudaAttention, BackwardMatchesFp64Reference) {
  const Shape s = GetParam();
  unsigned seed = 8765;
  int ran = 0;
  for (const bench::Implementation& impl : implementations()) {
    if (impl.backward == nullptr || !impl.unavailable.empty()) continue;
    if (!impl.takes_fp32 && s.dtype == DType::FP32) continue;
    std::string refusal;
    const auto r = run_backward(impl, s, seed, refusal);
    seed += 2;
    if (!r) {
      // cuDNN's refusals (bottom-right with q longer than kv) say so; the eager rows take every shape.
      if (impl.backward_takes_every_shape) ADD_FAILURE() << impl.name << " refused the shape: " << refusal;
      continue;
    }
    EXPECT_TRUE(r->passed(cpu::backward_tolerance(s.dtype)))
        << impl.name << ": dQ " << r->dq_error << ", dK " << r->dk_error << ", dV " << r->dv_error << ", unwritten "
        << r->unwritten;
    ++ran;
  }
  EXPECT_GE(ran, 1) << "no backward ran on this shape";
}

const bench::Implementation* find_row(const std::vector<bench::Implementation>& rows, const std::string& name) {
  for (const bench::Implementation& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

// The fused backward against cuDNN's on the same inputs: each of dQ, dK and dV within max(1.1x cuDNN's
// relative error, 3e-3) of the fp64 gradients (3e-3 alone where cuDNN refuses the shape). FlashAttention's
// test length pairs (tests/test_flash_attn.py), head dims 64 and 128, full and both causal alignments,
// multi-head, GQA and MQA, bf16 and fp16. `row` is the registry row: fused (the product's backward) or
// fused:hopper (bwd_sm90.cu). Returns the fused row's result (nullopt after a failure).
std::optional<cpu::BackwardCheckResult> check_fused_backward(const Shape& s, const std::string& row) {
  const auto rows = implementations();
  const bench::Implementation* fused = find_row(rows, row);
  const bench::Implementation* cudnn = find_row(rows, "cudnn");
  if (fused == nullptr || fused->backward == nullptr) {
    ADD_FAILURE() << "no " << row << " backward in the registry";
    return std::nullopt;
  }
  std::string refusal;
  const auto ours = run_backward(*fused, s, 2468, refusal, 2);
  if (!ours) {
    ADD_FAILURE() << row << " refused: " << refusal;
    return std::nullopt;
  }
  std::optional<cpu::BackwardCheckResult> theirs;
  if (cudnn && cudnn->unavailable.empty()) theirs = run_backward(*cudnn, s, 2468, refusal, 2);
  const auto bound = [&](double cudnn_error) { return std::max(1.1 * cudnn_error, 3e-3); };
  const double dq_bound = bound(theirs ? theirs->dq_error : 0), dk_bound = bound(theirs ? theirs->dk_error : 0),
               dv_bound = bound(theirs ? theirs->dv_error : 0);
  EXPECT_EQ(ours->unwritten, 0);
  EXPECT_LE(ours->dq_error, dq_bound);
  EXPECT_LE(ours->dk_error, dk_bound);
  EXPECT_LE(ours->dv_error, dv_bound);
  std::printf(
      "backward %s: %s dQ %.2e dK %.2e dV %.2e; cudnn %s\n", testing::shape_name(s).c_str(), row.c_str(),
      ours->dq_error, ours->dk_error, ours->dv_error,
      theirs
          ? fmt::format("dQ {:.2e} dK {:.2e} dV {:.2e}", theirs->dq_error, theirs->dk_error, theirs->dv_error).c_str()
          : "refused");
  return ours;
}

class FusedBackward : public CudaAttention {};

// The portable kernel (bwd_sm80.cu, the registry's fused:portable row: the product's backward off sm_90).
TEST_P(FusedBackward, WithinCudnnsErrorOfFp64) { check_fused_backward(GetParam(), "fused:portable"); }

// The Hopper backward (bwd_sm90.cu, the registry's fused:hopper row: the product's backward on sm_90) on
// the same shapes and bound, and against the portable one (fused:portable: its forward, bwd_sm80.cu's
// backward) on the same inputs: each one's error of dQ, dK and dV within twice the other's. Skips on
// devices other than sm_90.
class FusedBackwardHopper : public CudaAttention {
 protected:
  void SetUp() override {
    CudaAttention::SetUp();
    if (IsSkipped()) return;
    int dev = 0, major = 0, minor = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (major != 9 || minor != 0) GTEST_SKIP() << "the Hopper backward runs on sm_90 devices only";
  }
};

TEST_P(FusedBackwardHopper, WithinCudnnsErrorOfFp64AndPortables) {
  const Shape s = GetParam();
  const auto hopper = check_fused_backward(s, "fused:hopper");
  ASSERT_TRUE(hopper.has_value());
  const auto rows = implementations();
  const bench::Implementation* portable = find_row(rows, "fused:portable");
  ASSERT_NE(portable, nullptr);
  std::string refusal;
  const auto theirs = run_backward(*portable, s, 2468, refusal, 2);
  ASSERT_TRUE(theirs.has_value()) << "fused:portable refused: " << refusal;
  const auto agree = [](const char* what, double a, double b) {
    EXPECT_LE(a, 2 * b) << what << ": hopper " << a << ", portable " << b;
    EXPECT_LE(b, 2 * a) << what << ": hopper " << a << ", portable " << b;
  };
  agree("dQ", hopper->dq_error, theirs->dq_error);
  agree("dK", hopper->dk_error, theirs->dk_error);
  agree("dV", hopper->dv_error, theirs->dv_error);
  std::printf("backward %s: portable dQ %.2e dK %.2e dV %.2e\n", testing::shape_name(s).c_str(), theirs->dq_error,
              theirs->dk_error, theirs->dv_error);
}

std::vector<Shape> flash_attention_pairs() {
  // FlashAttention's (seqlen_q, seqlen_k) pairs, up to 1024 (the fp64 reference's time on the CPU).
  const int pairs[][2] = {{113, 203}, {128, 217},   {113, 211},   {108, 256},   {256, 512},
                          {512, 256}, {1024, 1024}, {1023, 1024}, {1024, 1023}, {1, 239}};
  const int heads[][2] = {{4, 4}, {6, 2}, {4, 1}};  // MHA, GQA, MQA
  std::vector<Shape> shapes;
  int i = 0;
  for (const auto& pr : pairs)
    for (int d : {64, 128})
      for (int mode = 0; mode < 3; ++mode, ++i) {
        const auto& h = heads[(i / 3 + mode) % 3];
        Shape s{1, h[0], h[1], pr[0], pr[1], d, mode > 0, mode == 2 ? CausalAlign::BottomRight : CausalAlign::TopLeft};
        if (i % 4 == 3) s.dtype = DType::FP16;
        if (i % 5 == 4) s.layout = Layout::BSHD;
        shapes.push_back(s);
      }
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(FlashAttentionPairs, FusedBackward, ::testing::ValuesIn(flash_attention_pairs()),
                         [](const ::testing::TestParamInfo<Shape>& p) { return testing::shape_name(p.param); });
INSTANTIATE_TEST_SUITE_P(FlashAttentionPairs, FusedBackwardHopper, ::testing::ValuesIn(flash_attention_pairs()),
                         [](const ::testing::TestParamInfo<Shape>& p) { return testing::shape_name(p.param); });
// Grids of more CTAs than an H100 or H200 has SMs (132): several waves, the sections of a causal grid in turn.
// The check's first and last (batch, KV head) are the CTAs launched first and last. Causal and full, MHA and
// GQA, D64 and D128, fp16; top-left causal with fewer queries than keys leaves key blocks no query sees (CTAs
// without items) among the rest.
INSTANTIATE_TEST_SUITE_P(
    ManyTiles, FusedBackwardHopper,
    ::testing::Values(Shape{4, 16, 16, 1024, 1024, 64, true},                                     // 512 CTAs
                      Shape{8, 16, 4, 1024, 1024, 128, true, CausalAlign::TopLeft, DType::FP16},  // 256
                      Shape{8, 16, 16, 1000, 1000, 128, false, CausalAlign::TopLeft, DType::BF16, Layout::BSHD},
                      Shape{4, 8, 8, 200, 1500, 64, true}),  // 384 CTAs, 320 of them without items
    [](const ::testing::TestParamInfo<Shape>& p) { return testing::shape_name(p.param); });

INSTANTIATE_TEST_SUITE_P(
    OddShapes, CudaAttention,
    ::testing::Values(Shape{1, 2, 2, 1, 1, 64, true}, Shape{2, 4, 4, 17, 17, 64, false},
                      Shape{2, 4, 4, 17, 17, 128, true}, Shape{2, 8, 2, 17, 45, 64, true},  // GQA, kv longer
                      Shape{1, 4, 1, 45, 17, 128, true, CausalAlign::BottomRight},          // MQA, fully masked rows
                      Shape{2, 4, 2, 45, 17, 64, true, CausalAlign::BottomRight, DType::BF16, Layout::BSHD},
                      Shape{2, 4, 2, 33, 70, 128, true, CausalAlign::TopLeft, DType::BF16, Layout::BSHD},
                      Shape{2, 4, 4, 65, 65, 64, false, CausalAlign::TopLeft, DType::BF16, Layout::BSHD},
                      Shape{1, 2, 2, 65, 65, 64, true, CausalAlign::TopLeft, DType::FP16},
                      Shape{1, 2, 1, 65, 130, 64, false, CausalAlign::TopLeft, DType::FP32},
                      Shape{2, 4, 4, 1000, 1000, 64, true}, Shape{1, 4, 2, 1000, 1000, 128, false},
                      Shape{1, 2, 2, 2049, 2049, 128, true}, Shape{1, 2, 1, 2049, 2049, 64, false},
                      // Rows past 2048 elements / 8 KB: the block softmax with 16-byte vectors.
                      Shape{1, 2, 2, 40, 4096, 64, true},
                      Shape{1, 2, 2, 40, 2560, 64, false, CausalAlign::TopLeft, DType::FP32},
                      // The block softmax past its shared-memory copy (fp32 rows over 40 KB), and
                      // with fully masked rows (bottom-right, 51 query rows see no key).
                      Shape{1, 1, 1, 3, 10300, 64, false, CausalAlign::TopLeft, DType::FP32},
                      Shape{1, 2, 1, 2100, 2049, 64, true, CausalAlign::BottomRight}),
    [](const ::testing::TestParamInfo<Shape>& p) { return testing::shape_name(p.param); });

}  // namespace
}  // namespace attnprof::attention
