// attnprof: tells why attention is slow on an NVIDIA GPU.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/input_error.h"
#include "common/suggest.h"

namespace {

// The first argument when it is a word that names no command: one line with the
// closest command, instead of CLI11's "A subcommand is required".
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return {};
  const std::string_view word = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return {};
    names.push_back(sub->get_name());
  }
  return fmt::format("unknown command '{}'{} (commands: {})", word, attnprof::did_you_mean(word, names),
                     fmt::join(names, ", "));
}

// The subcommand the arguments name (argv[1]), or null.
const CLI::App* named_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return nullptr;
  for (const CLI::App* sub : app.get_subcommands({}))
    if (sub->get_name() == argv[1]) return sub;
  return nullptr;
}

// "; did you mean '--region'?" for the first option in the arguments that `cmd` does not know.
std::string option_hint(const CLI::App& cmd, int argc, char** argv) {
  std::vector<std::string> known;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const std::string& n : o->get_lnames()) known.push_back("--" + n);
    for (const std::string& n : o->get_snames()) known.push_back("-" + n);
  }
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-' || (arg[1] != '-' && arg.size() == 2 && std::isdigit(arg[1]))) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    return attnprof::did_you_mean(arg, known);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  // Named here, not from argv[0]: the wheel starts the binary from inside site-packages.
  CLI::App app{"attnprof: why your attention is slow on an NVIDIA GPU, and a faster one", "attnprof"};
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", std::string("attnprof ") + ATTNPROF_VERSION);
  int exit_code = 0;
  attnprof::cli::add_doctor_command(app, exit_code);
  attnprof::cli::add_record_command(app, exit_code);
  attnprof::cli::add_bench_command(app, exit_code);
  attnprof::cli::add_diff_command(app, exit_code);
  attnprof::cli::add_completion_command(app, exit_code);
  attnprof::cli::add_mcp_command(app, exit_code);
  if (argc < 2) {  // a bare call: the usage, as a failed call
    fmt::print(stderr, "{}", app.help());
    return 2;
  }
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
    const CLI::App* cmd = named_command(app, argc, argv);
    const std::string hint = cmd && dynamic_cast<const CLI::ExtrasError*>(&e) ? option_hint(*cmd, argc, argv) : "";
    fmt::print(stderr, "attnprof: {}{}\n", e.what(), hint);
    fmt::print(stderr, "run 'attnprof {}--help' for usage\n", cmd ? cmd->get_name() + " " : "");
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
