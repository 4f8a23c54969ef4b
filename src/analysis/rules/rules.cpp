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

std::span<const RuleEntry> all_rules() {
  static constexpr std::array kRules = {
      RuleEntry{"cuda-core-gemm", rule_cuda_core_gemm},
      RuleEntry{"fp32-upcast", rule_fp32_upcast},
      RuleEntry{"mask-rebuilt", rule_mask_rebuilt},
      RuleEntry{"safe-softmax", rule_safe_softmax},
      RuleEntry{"unfused-attention", rule_unfused_attention},
      RuleEntry{"hidden-copy", rule_hidden_copy},
  };
  return kRules;
}

}  // namespace attnprof
