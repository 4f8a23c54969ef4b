// `attnprof mcp`: the MCP server is Python (python/attnprof/mcp.py, on the MCP SDK). The console
// script of the Python package runs it before this binary is reached; called directly, this binary
// says where it is.
#include "cli/commands.h"
#include "common/input_error.h"

namespace attnprof::cli {

void add_mcp_command(CLI::App& app, int& /*exit_code*/) {
  auto* cmd = app.add_subcommand(
      "mcp", "Serve doctor, check, diff, replay and bench to agents (Model Context Protocol, stdio)");
  cmd->allow_extras();
  cmd->set_help_flag();  // --help too goes to the Python server
  cmd->callback([] {
    throw InputError(
        "mcp: the MCP server is in the Python package: pip install \"attnprof[mcp]\", then run attnprof mcp "
        "(or python -m attnprof.mcp)");
  });
}

}  // namespace attnprof::cli
