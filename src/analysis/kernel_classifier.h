// Kernel classification: from a (demangled) kernel name to what it does, and
// for GEMMs which math unit and precision it ran on. The rules are one table
// (kernel_rules.cpp), first match wins, each row with its own test.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace attnprof {

enum class KernelCategory : std::uint8_t {
  Gemm,
  FusedAttention,
  Softmax,
  Elementwise,
  Reduction,
  CopyCast,
  FillMask,
  Memcpy,
  Memset,
  Convolution,
  Communication,
  Other
};
enum class MathUnit : std::uint8_t { None, TensorCore, CudaCore, Unknown };
enum class Precision : std::uint8_t { Unknown, FP64, FP32, TF32, BF16, FP16, Half16, FP8, INT8 };

// What a kernel does, finer than its category; the diagnosis rules use it.
enum class KernelOp : std::uint8_t {
  None,
  Matmul,
  Attention,
  Softmax,
  CastToFp32,
  CastTo16Bit,
  Copy,
  TriangularMask,
  Fill,
  Where,
  MaskedFill,
  IsNegInf,
  AllReduce,
  Mul,
  Add,
  Reduce,
  SoftmaxBackward,
  LogSoftmax,
  Dropout,
  Other
};

struct KernelClass {
  KernelCategory category = KernelCategory::Other;
  MathUnit unit = MathUnit::None;
  Precision precision = Precision::Unknown;
  KernelOp op = KernelOp::None;
  std::string_view rule;    // id of the table row that matched
  std::string_view family;  // library / generator, e.g. "cuBLAS nvjet"
};

KernelClass classify_kernel(std::string_view name);

// Elements an ATen elementwise/copy kernel touched, estimated from its launch
// (grid x block x items per thread read off the template arguments); 0 when the
// name does not say. An upper bound, exact when the size is a multiple of the tile.
std::int64_t estimate_elements(std::string_view name, std::int64_t grid_x, std::int64_t block_x);

std::string_view to_string(KernelCategory c);
std::string_view to_string(MathUnit u);
std::string_view to_string(Precision p);
std::string_view to_string(KernelOp o);
int bytes_per_element(Precision p);  // 0 when unknown

// The rows, for tests and documentation.
struct KernelRule {
  std::string_view id;
  std::string_view family;
  KernelCategory category;
  KernelOp op;
  bool (*matches)(std::string_view name);
  std::string_view example;  // a real kernel name this row must match
};
std::span<const KernelRule> kernel_rules();

// What a fused attention kernel's name says beyond its family: serving engines name their decode and
// their context (prefill) kernels apart, and some the paged KV cache they read and its page size.
enum class KernelPhase : std::uint8_t { Unknown, Prefill, Decode };
struct AttentionKernelName {
  KernelPhase phase = KernelPhase::Unknown;
  bool paged = false;
  int page_size = 0;  // tokens a page, 0 when the name does not say
  // cuDNN's generated SDPA forward kernels name their tile (..._knob_7_64x128x128_...): query rows, keys,
  // head dim; 0 when the name does not say. cuDNN decodes with a tile of at most 16 query rows.
  int tile_rows = 0, tile_keys = 0, head_dim = 0;
};
AttentionKernelName read_attention_kernel_name(std::string_view name);

// The part a fused attention kernel plays in its call: the main kernel, or a helper that joins the main
// kernel next to it (Before: a backward's dO.O preprocess; After: a split-KV combine, a dQ conversion).
enum class FusedRole : std::uint8_t { Main, Before, After };
FusedRole fused_role(std::string_view name);

}  // namespace attnprof
