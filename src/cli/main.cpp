// attnprof: tells why attention is slow on an NVIDIA GPU.
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/commands.h"
#include "trace/trace_error.h"

int main(int argc, char** argv) {
  CLI::App app{"attnprof: why your attention is slow on an NVIDIA GPU, and a faster one"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("attnprof ") + ATTNPROF_VERSION);
  int exit_code = 0;
  attnprof::cli::add_doctor_command(app, exit_code);
  attnprof::cli::add_record_command(app, exit_code);
  attnprof::cli::add_bench_command(app, exit_code);
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
    fmt::print(stderr, "attnprof: internal error: {}\n", e.what());
    return 1;
  }
  return exit_code;
}
