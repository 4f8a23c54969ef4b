// The subcommands of the attnprof tool. Each adds itself to the CLI11 app; when
// the user picks it, its callback runs and stores the process exit code.
// Exit codes: 0 success, 2 bad input or usage; `record` returns the child's code,
// `diff --fail-on` and `doctor --fail-on` 1 when the gate is hit, bench 1 when an fp64 check
// failed; 3 an internal error (a failed library call, a bug).
#pragma once

#include <CLI/CLI.hpp>

namespace attnprof::cli {

void add_doctor_command(CLI::App& app, int& exit_code);
void add_record_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_diff_command(CLI::App& app, int& exit_code);
void add_completion_command(CLI::App& app, int& exit_code);
void add_mcp_command(CLI::App& app, int& exit_code);

}  // namespace attnprof::cli
