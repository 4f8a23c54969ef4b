// The fp64 reference gradients against central finite differences of the fp64 reference forward
// (L = sum(dO * O), each input element moved by +-h in fp32 storage), and the backward check's
// verdict on gradients right, wrong and unwritten.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "attention/cpu/backward_check.h"
#include "attention/cpu/cpu_attention.h"
#include "attention/cpu/storage.h"
#include "attention_test_data.h"

namespace attnprof::attention {
namespace {

using testing::Shape;

// L = sum over the output of dO * O, the forward in fp64.
double loss(const AttentionParams& p, const std::vector<std::uint8_t>& d_out) {
  double l = 0.0;
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.q_heads; ++h) {
      const auto o = cpu::reference_slice(p, b, h);
      for (int i = 0; i < p.q_len; ++i)
        for (int c = 0; c < p.head_dim; ++c)
          l += o[static_cast<std::size_t>(i) * p.head_dim + c] *
               cpu::load_element(d_out.data(), p.dtype,
                                 b * p.out_strides.batch + h * p.out_strides.head + i * p.out_strides.row + c);
    }
  return l;
}

// dL/dx at element `at` of tensor `x` (fp32) by a central difference.
double numeric_grad(const AttentionParams& p, const std::vector<std::uint8_t>& d_out, std::vector<std::uint8_t>& x,
                    std::int64_t at) {
  float* e = reinterpret_cast<float*>(x.data()) + at;
  const float keep = *e;
  const float h = 1e-3f;
  *e = keep + h;
  const float up_at = *e;
  const double up = loss(p, d_out);
  *e = keep - h;
  const float down_at = *e;
  const double down = loss(p, d_out);
  *e = keep;
  return (up - down) / (static_cast<double>(up_at) - down_at);
}

class ReferenceBackward : public ::testing::TestWithParam<Shape> {};

TEST_P(ReferenceBackward, MatchesFiniteDifferences) {
  auto in = testing::make_host_attention(GetParam(), 77);
  const AttentionParams& p = in.params;
  const auto d_out = random_like_out(p, 78);
  const int group = p.q_heads / p.kv_heads, d = p.head_dim;
  for (int b = 0; b < p.batch; ++b)
    for (int kvh = 0; kvh < p.kv_heads; ++kvh) {
      std::vector<double> dq(static_cast<std::size_t>(group) * p.q_len * d), dk(static_cast<std::size_t>(p.kv_len) * d),
          dv(dk.size());
      cpu::reference_backward_group(p, d_out.data(), b, kvh, dq.data(), dk.data(), dv.data());
      // Every element of the group's dK and dV, and of its first query head's dQ.
      for (int j = 0; j < p.kv_len; ++j)
        for (int c = 0; c < d; ++c) {
          const std::int64_t k_at = b * p.k_strides.batch + kvh * p.k_strides.head + j * p.k_strides.row + c;
          const std::int64_t v_at = b * p.v_strides.batch + kvh * p.v_strides.head + j * p.v_strides.row + c;
          EXPECT_NEAR(dk[static_cast<std::size_t>(j) * d + c], numeric_grad(p, d_out, in.k, k_at), 2e-4)
              << "dK b" << b << " kv" << kvh << " j" << j << " c" << c;
          EXPECT_NEAR(dv[static_cast<std::size_t>(j) * d + c], numeric_grad(p, d_out, in.v, v_at), 2e-4)
              << "dV b" << b << " kv" << kvh << " j" << j << " c" << c;
        }
      for (int i = 0; i < p.q_len; ++i)
        for (int c = 0; c < d; ++c) {
          const int h = kvh * group;
          const std::int64_t q_at = b * p.q_strides.batch + h * p.q_strides.head + i * p.q_strides.row + c;
          EXPECT_NEAR(dq[static_cast<std::size_t>(i) * d + c], numeric_grad(p, d_out, in.q, q_at), 2e-4)
              << "dQ b" << b << " h" << h << " i" << i << " c" << c;
        }
    }
}

// fp32 storage (the perturbation is exact there): GQA with a longer kv, bottom-right with rows
// that see no key (zero gradients), BSHD, top-left with q longer than kv.
INSTANTIATE_TEST_SUITE_P(SmallShapes, ReferenceBackward,
                         ::testing::Values(Shape{1, 4, 2, 5, 7, 4, true, CausalAlign::TopLeft, DType::FP32},
                                           Shape{1, 2, 1, 6, 3, 4, true, CausalAlign::BottomRight, DType::FP32},
                                           Shape{2, 2, 2, 4, 4, 8, false, CausalAlign::TopLeft, DType::FP32,
                                                 Layout::BSHD},
                                           Shape{1, 2, 2, 6, 3, 4, true, CausalAlign::TopLeft, DType::FP32}),
                         [](const ::testing::TestParamInfo<Shape>& p) { return testing::shape_name(p.param); });

// The check passes the reference's own gradients stored in bf16, fails them scaled by 1.1 or
// with dK and dV swapped, and counts unwritten (NaN) elements.
TEST(BackwardCheck, PassesRightGradientsOnlyAndCountsUnwritten) {
  auto in = testing::make_host_attention(Shape{2, 4, 2, 33, 40, 16, true}, 5);
  const AttentionParams& p = in.params;
  const auto d_out = random_like_out(p, 6);
  std::vector<std::uint8_t> dq(in.q.size()), dk(in.k.size()), dv(in.v.size());
  const int group = p.q_heads / p.kv_heads, d = p.head_dim;
  auto store = [&](double scale) {
    for (int b = 0; b < p.batch; ++b)
      for (int kvh = 0; kvh < p.kv_heads; ++kvh) {
        std::vector<double> rq(static_cast<std::size_t>(group) * p.q_len * d),
            rk(static_cast<std::size_t>(p.kv_len) * d), rv(rk.size());
        cpu::reference_backward_group(p, d_out.data(), b, kvh, rq.data(), rk.data(), rv.data());
        for (int g = 0; g < group; ++g)
          for (int i = 0; i < p.q_len; ++i)
            for (int c = 0; c < d; ++c)
              cpu::store_element(dq.data(), p.dtype,
                                 b * p.q_strides.batch + (kvh * group + g) * p.q_strides.head + i * p.q_strides.row + c,
                                 static_cast<float>(scale * rq[(static_cast<std::size_t>(g) * p.q_len + i) * d + c]));
        for (int j = 0; j < p.kv_len; ++j)
          for (int c = 0; c < d; ++c) {
            cpu::store_element(dk.data(), p.dtype,
                               b * p.k_strides.batch + kvh * p.k_strides.head + j * p.k_strides.row + c,
                               static_cast<float>(rk[static_cast<std::size_t>(j) * d + c]));
            cpu::store_element(dv.data(), p.dtype,
                               b * p.v_strides.batch + kvh * p.v_strides.head + j * p.v_strides.row + c,
                               static_cast<float>(rv[static_cast<std::size_t>(j) * d + c]));
          }
      }
  };
  const double tol = cpu::backward_tolerance(p.dtype);
  store(1.0);
  auto r = cpu::check_backward_against_reference(p, d_out.data(), dq.data(), dk.data(), dv.data());
  EXPECT_TRUE(r.passed(tol)) << r.dq_error << " " << r.dk_error << " " << r.dv_error;
  EXPECT_LT(r.worst(), 5e-3);  // bf16 rounding alone
  EXPECT_EQ(r.groups_checked, 4);
  EXPECT_EQ(r.groups_total, 4);
  store(1.1);
  r = cpu::check_backward_against_reference(p, d_out.data(), dq.data(), dk.data(), dv.data());
  EXPECT_FALSE(r.passed(tol));
  EXPECT_NEAR(r.dq_error, 0.1, 0.01);
  EXPECT_LT(r.dk_error, 5e-3);
  store(1.0);
  r = cpu::check_backward_against_reference(p, d_out.data(), dq.data(), dv.data(), dk.data());  // swapped
  EXPECT_FALSE(r.passed(tol));
  std::memset(dv.data(), 0xff, 64);  // 32 bf16 NaNs
  r = cpu::check_backward_against_reference(p, d_out.data(), dq.data(), dk.data(), dv.data(), 2);
  EXPECT_EQ(r.groups_checked, 2);
  EXPECT_EQ(r.unwritten, 32);  // the first group, checked, holds them
  EXPECT_FALSE(r.passed(tol));
}

}  // namespace
}  // namespace attnprof::attention
