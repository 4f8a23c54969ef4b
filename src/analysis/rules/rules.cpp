// The one list of diagnosis rules. A new rule is a file in this folder and a
// line here.
#include "analysis/rules/rule.h"

#include <array>

namespace attnprof {

void rule_cuda_core_gemm(const RuleContext&, std::vector<Finding>&);
void rule_fp32_upcast(const RuleContext&, std::vector<Finding>&);
void rule_mask_rebuilt(const RuleContext&, std::vector<Finding>&);
void rule_safe_softmax(const RuleContext&, std::vector<Finding>&);
void rule_unfused_attention(const RuleContext&, std::vector<Finding>&);
void rule_hidden_copy(const RuleContext&, std::vector<Finding>&);
void rule_gpu_idle(const RuleContext&, std::vector<Finding>&);
void rule_kv_cache_cat(const RuleContext&, std::vector<Finding>&);
void rule_kv_repeat(const RuleContext&, std::vector<Finding>&);
void rule_kv_cache_gather(const RuleContext&, std::vector<Finding>&);
void rule_unsplit_decode(const RuleContext&, std::vector<Finding>&);
void rule_attention_host(const RuleContext&, std::vector<Finding>&);

std::span<const RuleEntry> all_rules() {
  static constexpr std::array kDiagnosisRules = {
      RuleEntry{"cuda-core-gemm", rule_cuda_core_gemm, "GEMMs run as FP32 FFMA on CUDA cores instead of tensor cores"},
      RuleEntry{"fp32-upcast", rule_fp32_upcast, "16-bit data cast to FP32 and back (in attention, or in the model)"},
      RuleEntry{"mask-rebuilt", rule_mask_rebuilt, "a causal mask built with fill/tril/where kernels on every call"},
      RuleEntry{"safe-softmax", rule_safe_softmax,
                "PyTorch's _safe_softmax passes (isneginf, all-reduce, where) after each softmax"},
      RuleEntry{"unfused-attention", rule_unfused_attention,
                "attention run as many kernels where one fused kernel would do, and what fusing saves"},
      RuleEntry{"hidden-copy", rule_hidden_copy, "device-to-device copies, named by the op that made them"},
      RuleEntry{"kv-cache-cat", rule_kv_cache_cat,
                "a KV cache grown by torch.cat every generated token: the whole cache copied per decode step"},
      RuleEntry{"kv-repeat", rule_kv_repeat,
                "K and V copied to every query head before grouped-query attention (repeat_kv), the calls reading the "
                "copies"},
      RuleEntry{"kv-cache-gather", rule_kv_cache_gather,
                "a paged KV cache gathered into dense K/V before every call that reads it (paged SDPA): the whole "
                "cache copied per decode step"},
      RuleEntry{"unsplit-decode", rule_unsplit_decode,
                "decode calls whose kernel runs a few CTAs on many SMs without splitting the keys (no split-KV)"},
      RuleEntry{"attention-host", rule_attention_host,
                "attention calls that held the CPU far longer than the others (a plan built for every new shape)"},
      RuleEntry{"gpu-idle", rule_gpu_idle,
                "the GPU idle for much of each step, and why: launches, CPU work, host syncs, copies, communication"},
  };
  return kDiagnosisRules;
}

}  // namespace attnprof
