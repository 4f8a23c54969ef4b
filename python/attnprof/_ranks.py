"""Many traces of one job (one per rank): `doctor_many` maps the per-rank analysis over an executor
(a process pool by default; a Dask cluster's `Client.get_executor()` runs it next to the traces) and
compares the summaries as `attnprof doctor DIR` does."""

from __future__ import annotations

import concurrent.futures
import json
import os
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _core

PathLike = Union[str, "os.PathLike[str]"]


def _summarize(path: str, region: str) -> str:
    """One rank's summary, where the executor runs it: a local path, or an fsspec URL (s3://, gs://, ...)."""
    if "://" in path and not path.startswith("file://"):
        try:
            import fsspec  # type: ignore[import-not-found]
        except ImportError as e:
            raise _core.InputError(f"{path}: a URL needs fsspec (pip install fsspec) where the traces are read") from e
        with fsspec.open(path, "rb") as f:
            return _core.rank_summary_of_bytes(f.read(), path, region)
    return _core.rank_summary(path.removeprefix("file://"), region)


def _paths(paths: Union[PathLike, Iterable[PathLike]]) -> List[str]:
    if isinstance(paths, (str, os.PathLike)):
        p = os.fspath(paths)
        return _core.job_traces(p) if os.path.isdir(p) else [p]
    out = [os.fspath(p) for p in paths]
    if len(out) == 1 and os.path.isdir(out[0]):
        return _core.job_traces(out[0])
    return out


def summaries(
    paths: Union[PathLike, Iterable[PathLike]],
    executor: Optional[concurrent.futures.Executor] = None,
    region: Optional[str] = None,
) -> List[str]:
    """Each rank trace reduced to its summary (JSON text) on `executor` (default: a process pool)."""
    files = _paths(paths)
    if not files:
        raise _core.InputError("doctor_many: no traces given")
    reg = region or ""
    if executor is None:
        workers = min(len(files), os.cpu_count() or 1)
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_summarize, files, [reg] * len(files)))
    return list(executor.map(_summarize, files, [reg] * len(files)))


def doctor_many(
    paths: Union[PathLike, Iterable[PathLike]],
    executor: Optional[concurrent.futures.Executor] = None,
    region: Optional[str] = None,
) -> Dict[str, Any]:
    """The report across the ranks of one job, as `attnprof doctor DIR --json` prints it (a dict).

    `paths`: a folder (its rank traces), or the traces (paths or fsspec URLs). Each trace is read and
    reduced to a small summary on `executor` (default: a process pool on this machine's cores), so
    only the summaries travel back. A bad trace is named in its rank's row (`error`); a set that is
    not one job (a rank twice, world sizes that differ) raises InputError.
    """
    return json.loads(_core.ranks_report(summaries(paths, executor, region), "json"))


def diff_many(
    before: Union[PathLike, Iterable[PathLike]],
    after: Union[PathLike, Iterable[PathLike]],
    executor: Optional[concurrent.futures.Executor] = None,
    region: Optional[str] = None,
    regression_pct: Optional[float] = None,
    gate_on: str = "auto",
) -> Dict[str, Any]:
    """Two runs of one job compared rank by rank, as `attnprof diff DIR_A DIR_B --json` prints it (a dict).

    Each side is a folder of rank traces or the traces (paths or fsspec URLs), summarized on `executor`
    as doctor_many does. With regression_pct, doc["gate"]["regression"] says whether the job regressed:
    its step (its slowest rank's median step; gate_on "attention": the most attention time of a rank)
    grew by more than regression_pct percent, or a rank has a new attention finding.
    """
    if regression_pct is not None and not (0 <= regression_pct < 1e6):
        raise _core.InputError(f"regression_pct {regression_pct}: expected a number >= 0 (the growth per step allowed)")
    a = summaries(before, executor, region)
    b = summaries(after, executor, region)
    return json.loads(_core.ranks_diff(a, b, regression_pct, "json", gate_on))
