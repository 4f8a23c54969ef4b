"""Where the CLI bundled in the package is (attnprof/bin/attnprof)."""

from pathlib import Path


def binary() -> Path:
    return Path(__file__).resolve().parent / "bin" / "attnprof"
