// attnprof bench (placeholder until its issue lands).
#include <fmt/core.h>
#include "cli/commands.h"
namespace attnprof::cli {
void add_bench_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("bench", "not built yet");
  cmd->callback([&exit_code] { fmt::print(stderr, "attnprof bench: not built yet\n"); exit_code = 2; });
}
}  // namespace attnprof::cli
