#include "common/number_text.h"

#include <fmt/format.h>

namespace attnprof::text {

std::string ms(std::int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6); }

}  // namespace attnprof::text
