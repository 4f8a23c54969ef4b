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
