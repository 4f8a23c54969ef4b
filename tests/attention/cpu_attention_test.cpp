// Every CPU implementation against the fp64 reference on odd shapes: lengths
// that are no tile multiple, q/kv lengths that differ, GQA/MQA, both causal
// alignments, both layouts, D 64 and 128, all three dtypes.
#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "attention/cpu/check.h"
#include "attention/cpu/cpu_attention.h"
#include "attention/cpu/storage.h"
#include "attention/host_inputs.h"
#include "attention_test_data.h"

namespace attnprof::attention {
namespace {

using testing::Shape;

struct Impl {
  const char* name;
  AttentionFn fn;
};

const Impl kImpls[] = {
    {"reference", cpu::reference}, {"manual", cpu::manual}, {"math", cpu::math}, {"flash", cpu::flash}};

class CpuAttention : public ::testing::TestWithParam<Shape> {};

TEST_P(CpuAttention, MatchesFp64Reference) {
  const Shape s = GetParam();
  unsigned seed = 1234;
  for (const Impl& impl : kImpls) {
    auto data = testing::make_host_attention(s, seed++);  // fresh inputs for every implementation
    std::vector<float> lse(static_cast<std::size_t>(s.batch) * s.heads * s.q_len, NAN);
    data.params.lse = lse.data();
    impl.fn(data.params, {});
    const auto check = cpu::check_against_reference(data.params, data.out.data());
    EXPECT_LT(check.rel_error, cpu::tolerance(s.dtype)) << impl.name;
    EXPECT_EQ(check.slices_checked, s.batch * s.heads);
    if (std::string(impl.name) == "flash") {  // lse of the first slice against fp64
      std::vector<double> want;
      cpu::reference_slice(data.params, 0, 0, &want);
      for (int i = 0; i < s.q_len; ++i) {
        if (std::isinf(want[i])) {
          EXPECT_TRUE(std::isinf(lse[i]) && lse[i] < 0) << "row " << i;
        } else {
          EXPECT_NEAR(lse[i], want[i], 1e-3 * (1.0 + std::fabs(want[i]))) << "row " << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, CpuAttention,
    ::testing::Values(Shape{1, 2, 2, 1, 1, 64, true}, Shape{2, 4, 4, 17, 17, 64, false},
                      Shape{2, 4, 2, 17, 17, 128, true}, Shape{1, 4, 1, 17, 45, 64, true},  // MQA, kv longer
                      Shape{2, 2, 1, 45, 17, 64, true, CausalAlign::BottomRight},           // fully masked rows
                      Shape{1, 4, 2, 33, 70, 128, true, CausalAlign::BottomRight, DType::BF16, Layout::BSHD},
                      Shape{1, 2, 2, 65, 65, 64, true, CausalAlign::TopLeft, DType::FP16},
                      Shape{1, 2, 1, 65, 130, 64, false, CausalAlign::TopLeft, DType::FP32, Layout::BSHD},
                      Shape{1, 1, 1, 1000, 1000, 64, true}, Shape{1, 1, 1, 2049, 2049, 128, true}),
    [](const ::testing::TestParamInfo<Shape>& p) { return testing::shape_name(p.param); });

TEST(CpuAttention, FullyMaskedRowsAreZero) {
  // q longer than kv with bottom-right causal: the first q_len - kv_len rows see nothing.
  auto data = testing::make_host_attention({1, 1, 1, 8, 3, 64, true, CausalAlign::BottomRight}, 7);
  for (AttentionFn fn : {cpu::manual, cpu::math, cpu::flash}) {
    attention::poison(data.out);
    fn(data.params, {});
    for (int i = 0; i < 5 * 64; ++i) EXPECT_EQ(cpu::load_element(data.out.data(), DType::BF16, i), 0.0f);
  }
}

// The one check (bench and fused lab alike) reads the lse too, and counts what
// was never written: kv_len 0 (every row sees no key: zeros, lse -inf) and a
// causal GQA shape.
TEST(CpuAttention, CheckReadsTheLseAndCountsUnwrittenElements) {
  for (const int kv : {0, 33}) {
    SCOPED_TRACE(kv);
    HostInputs in = make_host_inputs(make_params(1, 2, 1, 17, kv, 64, true, DType::BF16), 3);
    std::vector<float> lse(2 * 17, std::nanf(""));
    in.params.lse = lse.data();
    cpu::reference(in.params, {});
    cpu::CheckResult r = cpu::check_against_reference(in.params, in.out.data(), 0, lse.data());
    EXPECT_TRUE(r.passed(1e-2)) << r.rel_error << " " << r.max_lse_err;
    EXPECT_EQ(r.unwritten, 0);
    if (kv == 0) {
      EXPECT_TRUE(std::isinf(lse[0]) && lse[0] < 0);
    }
    const float right = lse[1];
    lse[1] = kv == 0 ? 0.0f : right + 0.5f;  // a wrong lse
    r = cpu::check_against_reference(in.params, in.out.data(), 0, lse.data());
    EXPECT_FALSE(r.passed(1e-2));
    lse[1] = std::nanf("");  // an lse never written
    r = cpu::check_against_reference(in.params, in.out.data(), 0, lse.data());
    EXPECT_EQ(r.unwritten, 1);
    EXPECT_FALSE(r.passed(1e-2));
  }
}

TEST(CpuAttention, PoisonedOutputFailsTheCheck) {
  auto data = testing::make_host_attention({1, 2, 2, 17, 17, 64, false}, 9);
  const auto check = cpu::check_against_reference(data.params, data.out.data());
  EXPECT_TRUE(std::isinf(check.rel_error));
}

// One long slice is checked in row chunks across threads: the chunks together cover every row
// once (a wrong element in the first or the last row, or a wrong lse in the middle, is caught;
// the right output passes), with rows that see no key (bottom-right, Sq > Skv) among them.
TEST(CpuAttention, CheckOfOneLongSliceCoversEveryRow) {
  for (const CausalAlign align : {CausalAlign::TopLeft, CausalAlign::BottomRight}) {
    SCOPED_TRACE(align == CausalAlign::TopLeft ? "top-left" : "bottom-right");
    HostInputs in = make_host_inputs(make_params(1, 1, 1, 1000, 700, 64, true, DType::BF16), 5);
    in.params.causal_align = align;
    std::vector<float> lse(1000, std::nanf(""));
    in.params.lse = lse.data();
    cpu::flash(in.params, {});
    cpu::CheckResult r = cpu::check_against_reference(in.params, in.out.data(), 0, lse.data());
    EXPECT_TRUE(r.passed(1e-2)) << r.rel_error << " " << r.max_lse_err;
    EXPECT_EQ(r.slices_checked, 1);
    for (const int row : {0, 999}) {
      std::vector<std::uint8_t> out = in.out;
      const std::int64_t element = static_cast<std::int64_t>(row) * 64 + 5;
      cpu::store_element(out.data(), DType::BF16, element, cpu::load_element(out.data(), DType::BF16, element) + 4.0f);
      EXPECT_GT(cpu::check_against_reference(in.params, out.data(), 0, lse.data()).rel_error, 10 * r.rel_error) << row;
    }
    lse[500] = std::nanf("");
    EXPECT_EQ(cpu::check_against_reference(in.params, in.out.data(), 0, lse.data()).unwritten, 1);
  }
}

TEST(CpuAttention, SampledCheckSpreadsOverSlices) {
  auto data = testing::make_host_attention({3, 4, 2, 17, 17, 64, true}, 11);
  cpu::flash(data.params, {});
  const auto check = cpu::check_against_reference(data.params, data.out.data(), 3);
  EXPECT_EQ(check.slices_checked, 3);
  EXPECT_EQ(check.slices_total, 12);
  EXPECT_LT(check.rel_error, 1e-2);
}

// FLOPs: 4*B*H*D per pair computed; the pairs a causal call computes counted by hand from the
// alignment's definition (top-left: row i sees keys 0..i; bottom-right: 0..i + Skv - Sq).
TEST(AttentionFlops, CountsThePairsEachCausalAlignmentComputes) {
  const double per_pair = 4.0 * 2 * 8 * 128;  // B 2, H 8, D 128
  AttentionParams full = make_params(2, 8, 8, 512, 8192, 128, false, DType::BF16);
  EXPECT_DOUBLE_EQ(attention_flops(full), per_pair * 512 * 8192);
  // A square: the field's S*S/2 (FlashAttention's benchmarks count it so), either alignment.
  AttentionParams square = make_params(2, 8, 8, 1024, 1024, 128, true, DType::BF16);
  EXPECT_DOUBLE_EQ(attention_flops(square), per_pair * 1024 * 1024 / 2);
  square.causal_align = CausalAlign::BottomRight;
  EXPECT_DOUBLE_EQ(attention_flops(square), per_pair * 1024 * 1024 / 2);
  // Chunked prefill, bottom-right: 512 new rows after 7680 cached keys; row i sees 7681 + i keys.
  AttentionParams prefill = make_params(2, 8, 8, 512, 8192, 128, true, DType::BF16);
  prefill.causal_align = CausalAlign::BottomRight;
  EXPECT_DOUBLE_EQ(attention_flops(prefill), per_pair * (512.0 * 7680 + 512.0 * 513 / 2));
  // Top-left with more queries than keys: rows 0..511 see i + 1 keys, the other 7680 all 512.
  AttentionParams tall = make_params(2, 8, 8, 8192, 512, 128, true, DType::BF16);
  EXPECT_DOUBLE_EQ(attention_flops(tall), per_pair * (512.0 * 513 / 2 + 7680.0 * 512));
  // Bottom-right with more queries than keys: the first 7680 rows see nothing.
  tall.causal_align = CausalAlign::BottomRight;
  EXPECT_DOUBLE_EQ(attention_flops(tall), per_pair * (512.0 * 513 / 2));
}

}  // namespace
}  // namespace attnprof::attention

// The paged cache the decode kernel's checks and `bench --page-size` read: every key of every sequence
// where the block table and the page strides put it (the address rule of decode_kernel.cu), each page
// named once, and NaN in every slot no sequence owns (past a sequence's length, the spare pages).
TEST(KvCache, PagesHoldEachSequencesKeysWhereTheTableSays) {
  using namespace attnprof::attention;
  for (Layout layout : {Layout::BHSD, Layout::BSHD})
    for (int page_size : {16, 7, 256}) {
      const AttentionParams shape = make_params(5, 4, 2, 1, 300, 64, false, DType::BF16, layout);
      const HostInputs in = make_host_inputs(shape, 3);
      const std::vector<int> lens = ragged_lengths(shape.batch, shape.kv_len);
      ASSERT_EQ(lens.size(), 5u);
      EXPECT_EQ(lens[0], 300);
      EXPECT_EQ(lens[1], 1);
      EXPECT_EQ(lens[3], 0);
      const HostKvCache c = make_kv_cache(in, page_size, lens, 11);
      ASSERT_GE(static_cast<long>(c.pages_per_seq) * page_size, shape.kv_len);
      std::set<int> pages(c.block_table.begin(), c.block_table.end());
      EXPECT_EQ(pages.size(), c.block_table.size()) << "a page named twice";
      std::vector<bool> owned(c.k.size() / 2, false);
      for (int b = 0; b < shape.batch; ++b)
        for (int h = 0; h < shape.kv_heads; ++h)
          for (int j = 0; j < lens[b]; ++j) {
            const long page = c.block_table[b * c.pages_per_seq + j / page_size];
            const long at = page * c.strides.batch + h * c.strides.head + (j % page_size) * c.strides.row;
            const long src = b * shape.k_strides.batch + h * shape.k_strides.head + j * shape.k_strides.row;
            ASSERT_TRUE(std::equal(in.k.begin() + 2 * src, in.k.begin() + 2 * (src + 64), c.k.begin() + 2 * at));
            ASSERT_TRUE(std::equal(in.v.begin() + 2 * src, in.v.begin() + 2 * (src + 64), c.v.begin() + 2 * at));
            for (int d = 0; d < 64; ++d) owned[at + d] = true;
          }
      for (std::size_t e = 0; e < owned.size(); ++e) {
        if (owned[e]) continue;
        ASSERT_EQ(c.k[2 * e] & c.k[2 * e + 1], 0xff) << "element " << e << " not NaN";
      }
    }
}
