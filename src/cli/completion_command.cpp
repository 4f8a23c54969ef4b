// `attnprof completion bash|zsh`: a shell completion script made from the CLI's own
// commands and options, so it never falls behind them.
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/input_error.h"

namespace attnprof::cli {
namespace {

std::string options_of(const CLI::App& cmd) {
  std::string out;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const std::string& n : o->get_lnames()) out += (out.empty() ? "--" : " --") + n;
    for (const std::string& n : o->get_snames()) out += (out.empty() ? "-" : " -") + n;
  }
  return out;
}

// One bash function: the command word first, then that command's options; files otherwise.
std::string bash_script(const CLI::App& app) {
  std::string commands, cases;
  for (const CLI::App* sub : app.get_subcommands({})) {
    commands += (commands.empty() ? "" : " ") + sub->get_name();
    cases += fmt::format("    {}) opts=\"{}\" ;;\n", sub->get_name(), options_of(*sub));
  }
  return fmt::format(R"sh(# attnprof completion for bash: eval "$(attnprof completion bash)"
_attnprof() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} opts
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "{} {}" -- "$cur"))
    return
  fi
  case ${{COMP_WORDS[1]}} in
{}    *) opts="" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -o filenames -F _attnprof attnprof
)sh",
                     commands, options_of(app), cases);
}

}  // namespace

void add_completion_command(CLI::App& app, int& exit_code) {
  auto shell = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("completion", "Print a shell completion script: eval \"$(attnprof completion bash)\"");
  cmd->add_option("shell", *shell, "bash or zsh")->required();
  cmd->callback([&app, shell, &exit_code] {
    if (*shell == "bash") {
      fmt::print("{}", bash_script(app));
    } else if (*shell == "zsh") {  // zsh runs the bash function through its bashcompinit
      fmt::print(
          "# attnprof completion for zsh: eval \"$(attnprof completion zsh)\"\n"
          "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n{}",
          bash_script(app));
    } else {
      throw InputError(fmt::format("completion {}: the shells are bash and zsh", *shell));
    }
    exit_code = 0;
  });
}

}  // namespace attnprof::cli
