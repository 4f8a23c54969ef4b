// attnprof: tells why attention is slow on an NVIDIA GPU.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/input_error.h"

namespace {

// Edit distance, for "did you mean" on a mistyped command.
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The first argument when it is a word that names no command: one line with the
// closest command, instead of CLI11's "A subcommand is required".
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return {};
  const std::string_view word = argv[1];
  std::string names, closest;
  std::size_t best = SIZE_MAX;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return {};
    names += (names.empty() ? "" : ", ") + sub->get_name();
    if (const std::size_t d = distance(word, sub->get_name()); d < best) {
      best = d;
      closest = sub->get_name();
    }
  }
  const std::string hint = best <= 2 ? fmt::format("; did you mean '{}'?", closest) : std::string();
  return fmt::format("unknown command '{}'{} (commands: {})", word, hint, names);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnprof: why your attention is slow on an NVIDIA GPU, and a faster one"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("attnprof ") + ATTNPROF_VERSION);
  int exit_code = 0;
  attnprof::cli::add_doctor_command(app, exit_code);
  attnprof::cli::add_record_command(app, exit_code);
  attnprof::cli::add_bench_command(app, exit_code);
  attnprof::cli::add_diff_command(app, exit_code);
  if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
    fmt::print(stderr, "attnprof: {}\n", unknown);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "attnprof: {}\n", e.what());
    fmt::print(stderr, "run 'attnprof --help' for usage\n");
    return 2;
  } catch (const attnprof::InputError& e) {
    fmt::print(stderr, "attnprof: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    // 3, not 1: the gates (doctor --fail-on, diff --fail-on) and bench's failed check exit 1.
    fmt::print(stderr, "attnprof: internal error: {}\n", e.what());
    return 3;
  }
  return exit_code;
}
