"""`python -m attnprof ...` and the `attnprof` console script: the CLI that ships in the wheel."""

import os
import sys

from ._cli import binary


def main() -> None:
    if sys.argv[1:2] == ["mcp"]:  # the MCP server is Python (the SDK); everything else is the C++ CLI
        from .mcp import main as mcp_main

        mcp_main(sys.argv[2:])
        return
    exe = binary()
    if not exe.is_file():
        sys.stderr.write(f"attnprof: the CLI is missing from the installed package ({exe}); reinstall attnprof\n")
        sys.exit(2)
    os.execv(str(exe), [str(exe), *sys.argv[1:]])


if __name__ == "__main__":
    main()
