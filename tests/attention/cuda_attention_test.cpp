// Every CUDA implementation against the fp64 reference on odd shapes (lengths
// 1, 17, 1000, 2049; q/kv lengths that differ; GQA/MQA; causal both ways; D 64
// and 128; BSHD), fresh random inputs and a NaN-poisoned output each time.
// Skips without a CUDA device. Label: gpu.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "attention/cpu/backward_check.h"
#include "attention/cpu/check.h"
#include "attention/cuda/cuda_attention.h"
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

// Every registry row with a backward: its forward (with an lse, which cuDNN's backward reads), then
// its backward against the fp64 reference gradients.
TEST_P(CudaAttention, BackwardMatchesFp64Reference) {
  const Shape s = GetParam();
  unsigned seed = 8765;
  int ran = 0;
  for (const bench::Implementation& impl : implementations()) {
    if (impl.backward == nullptr || !impl.unavailable.empty()) continue;
    if (!impl.takes_fp32 && s.dtype == DType::FP32) continue;
    auto host = testing::make_host_attention(s, seed++);
    const auto d_out_host = random_like_out(host.params, seed++);
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
      // cuDNN's refusals (bottom-right with q longer than kv) say so; the eager rows take every shape.
      if (impl.backward_takes_every_shape) ADD_FAILURE() << impl.name << " refused the shape: " << e.what();
      continue;
    }
    check_cuda(cudaDeviceSynchronize(), impl.name.c_str());
    check_cuda(cudaMemcpy(dq_host.data(), dq.ptr, dq_host.size(), cudaMemcpyDeviceToHost), "copy dq");
    check_cuda(cudaMemcpy(dk_host.data(), dk.ptr, dk_host.size(), cudaMemcpyDeviceToHost), "copy dk");
    check_cuda(cudaMemcpy(dv_host.data(), dv.ptr, dv_host.size(), cudaMemcpyDeviceToHost), "copy dv");
    const auto r = cpu::check_backward_against_reference(host.params, d_out_host.data(), dq_host.data(), dk_host.data(),
                                                         dv_host.data());
    EXPECT_TRUE(r.passed(cpu::backward_tolerance(s.dtype)))
        << impl.name << ": dQ " << r.dq_error << ", dK " << r.dk_error << ", dV " << r.dv_error << ", unwritten "
        << r.unwritten;
    ++ran;
  }
  EXPECT_GE(ran, 1) << "no backward ran on this shape";
}

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
