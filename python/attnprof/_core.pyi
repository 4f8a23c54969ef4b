"""attnprof's C++ engine (doctor, diff, the CI gates); use the attnprof package, not this module.

Type stubs for the compiled module (python/bindings/core.cpp); python/tests/test_stubs.py checks that
they name what the module has.
"""

from typing import List, Optional

__version__: str
json_schema_version: int
diff_json_schema_version: int
default_regression_pct: float
kernel_categories: List[str]  # the categories of doctor's kernel table

class InputError(ValueError):
    """Bad input (a missing, truncated or malformed trace, a bad option): the CLI's one-line message."""

class Doctor:
    """One trace read and analysed (the GIL released while it is)."""

    def __init__(self, path: str, region: str = "", label: str = "", capture_trace: str = "") -> None: ...
    def json(self) -> str: ...
    def text(self) -> str: ...
    def brief(self) -> str:
        """`doctor --brief`: the first screen alone."""
    def markdown(self) -> str:
        """`doctor --markdown`: the report as a pull-request or issue comment."""
    def html(self) -> str: ...
    def annotated_trace(self) -> str: ...
    def caught(self, fail_on: List[str]) -> List[int]:
        """The findings `fail_on` catches, as indices into the report's findings."""

def diff(
    before: Doctor, after: Doctor, regression_pct: Optional[float] = None, form: str = "json", gate_on: str = "auto"
) -> str:
    """The comparison of two analysed traces as text, json, markdown or html; the gate on step or attention time."""

def rank_summary(path: str, region: str = "") -> str:
    """One rank's trace reduced to its summary (JSON text; a bad trace gives a summary with its error)."""

def rank_summary_of_bytes(data: bytes, label: str, region: str = "") -> str:
    """rank_summary of a trace's bytes (plain or gzip), named `label`."""

def job_traces(folder: str) -> List[str]:
    """The traces of a job in a folder, as `attnprof doctor DIR` takes them."""

def ranks_report(summaries: List[str], form: str = "json") -> str:
    """The report across ranks (json, text or markdown) from rank summaries, as `attnprof doctor DIR` prints it."""

def ranks_diff(
    before: List[str], after: List[str], regression_pct: Optional[float] = None, form: str = "json", gate_on: str = "auto"
) -> str:
    """Two runs of one job rank by rank (json, text or markdown) from their summaries, as `attnprof diff DIR_A DIR_B`."""
