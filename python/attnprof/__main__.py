"""`python -m attnprof ...` and the `attnprof` console script: the CLI that ships in the wheel."""

import os
import sys

from ._cli import binary


def main() -> None:
    exe = binary()
    if not exe.is_file():
        sys.stderr.write(f"attnprof: the CLI is missing from the installed package ({exe}); reinstall attnprof\n")
        sys.exit(2)
    os.execv(str(exe), [str(exe), *sys.argv[1:]])


if __name__ == "__main__":
    main()
