"""pmx from Python: CPU performance counters.

>>> import pmx
>>> r = pmx.stat(["true"], events=["task-clock", "page-faults"])
>>> r.counts["page-faults"].value > 0
True
>>> with pmx.Counters(["task-clock", "page-faults"]) as c:
...     data = bytearray(1 << 20)
>>> c.read()["page-faults"].value >= 0
True

Every call goes to pmx's Rust library (the calls the ``pmx`` command and
the C API make); errors are :class:`PmxError` with pmx's own message.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Union

from . import _pmx
from ._pmx import PmxError

__all__ = [
    "PmxError",
    "Count",
    "Metric",
    "StatResult",
    "stat",
    "Counters",
    "region",
    "region_results",
    "Recorder",
    "analyze",
    "report",
]


class Count(NamedTuple):
    """One event's count: raw value, times enabled and running (ns), the
    value scaled for multiplexing (in the event's unit; None when not
    counted), the unit, and why it was not counted (None when it was)."""

    value: int
    enabled: int
    running: int
    scaled: Optional[float] = None
    unit: Optional[str] = None
    reason: Optional[str] = None


class Metric(NamedTuple):
    """A metric's value (None when an input is missing, then ``missing``
    says which)."""

    value: Optional[float]
    unit: str
    missing: Optional[str]


def _list(events: Union[str, Sequence[str], None]) -> List[str]:
    if events is None:
        return []
    if isinstance(events, str):
        return [events]
    return [",".join(events)] if events else []


class StatResult:
    """What :func:`stat` counted."""

    def __init__(self, raw: Dict[str, Any]):
        self.counts: Dict[str, Count] = {
            name: Count(value, enabled, running, scaled, unit, reason)
            for (name, value, enabled, running, scaled, unit, reason) in raw["events"]
        }
        self.metrics: Dict[str, Metric] = {
            name: Metric(value, unit, missing) for (name, value, unit, missing) in raw["metrics"]
        }
        self.elapsed: float = raw["elapsed"]
        self.runs: int = raw["runs"]
        self.exit_code: Optional[int] = raw["exit_code"]

    def to_dict(self) -> Dict[str, Any]:
        return {
            "counts": {k: v._asdict() for k, v in self.counts.items()},
            "metrics": {k: v._asdict() for k, v in self.metrics.items()},
            "elapsed": self.elapsed,
            "runs": self.runs,
            "exit_code": self.exit_code,
        }

    def to_pandas(self):
        """One row per event (needs pandas)."""
        import pandas as pd

        return pd.DataFrame.from_dict(
            {k: v._asdict() for k, v in self.counts.items()}, orient="index"
        )

    def __repr__(self) -> str:
        return f"StatResult(counts={self.counts!r}, metrics={self.metrics!r})"


def stat(
    command: Sequence[str],
    events: Union[str, Sequence[str], None] = None,
    repeat: int = 1,
    metrics: Union[str, Sequence[str], None] = None,
) -> StatResult:
    """Count ``command`` as ``pmx stat -e EVENTS -r REPEAT -M METRICS --
    COMMAND`` does (default events when none are given)."""
    m = None if metrics is None else (metrics if isinstance(metrics, str) else ",".join(metrics))
    return StatResult(_pmx.stat(list(command), _list(events) or None, repeat, m))


class Counters:
    """Counters of the calling thread (or ``pid``/``cpu`` as perf takes
    them); a context manager that enables on entry and disables on exit.

    ``read()`` returns ``{name: Count}``; ``read_raw()`` the bare tuples.
    """

    def __init__(self, events: Union[str, Sequence[str]], pid: int = 0, cpu: int = -1):
        self._c = _pmx.Counters(",".join(_list(events)), pid, cpu)
        self.names: List[str] = self._c.names()
        self.reasons: List[Optional[str]] = self._c.reasons()
        self._units = self._c.units()

    def enable(self) -> None:
        self._c.enable()

    def disable(self) -> None:
        self._c.disable()

    def reset(self) -> None:
        self._c.reset()

    def read_raw(self) -> List[tuple]:
        return self._c.read_raw()

    def read(self) -> Dict[str, Count]:
        out = {}
        for name, reason, (unit, scale), (value, enabled, running) in zip(
            self.names, self.reasons, self._units, self._c.read_raw()
        ):
            scaled = None
            if reason is None and running > 0:
                scaled = value * enabled / running * scale
            out[name] = Count(value, enabled, running, scaled, unit, reason)
        return out

    def __enter__(self) -> "Counters":
        self.enable()
        return self

    def __exit__(self, *exc) -> None:
        self.disable()


class region:
    """``with pmx.region("solve"): ...`` — the same regions as the C
    API's ``pmx_region_begin/end`` and Rust's ``pmx::region`` (events from
    ``$PMX_EVENTS``, results in ``$PMX_REGIONS_OUT``)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> "region":
        _pmx.region_begin(self.name)
        return self

    def __exit__(self, *exc) -> None:
        _pmx.region_end(self.name)


def region_results() -> Dict[str, Any]:
    """Every thread's region results (the ``pmx-regions/1`` document)."""
    return json.loads(_pmx.region_results())


Transform = Union[str, Callable[[List[int], List[int]], List[int]], None]


class Recorder:
    """Handles read together every ``interval_ms`` until ``capacity``
    samples are stored; each handle's raw per-CPU values pass through a
    transform (``"delta"``: wrap-safe change since the previous read,
    ``"raw"``, or ``f(now, prev) -> values``) before they are stored."""

    def __init__(self, interval_ms: int = 100, capacity: int = 1000):
        self._r = _pmx.Recorder(interval_ms, capacity)

    def add_event(
        self, event: str, cpus: Optional[Iterable[int]] = None, transform: Transform = "delta"
    ) -> int:
        """A perf event on ``cpus`` (default every online CPU)."""
        return self._r.add_event(event, None if cpus is None else list(cpus), transform)

    def add_msr(self, register: str, scope: str = "thread", transform: Transform = "delta") -> int:
        """An MSR read once per ``scope`` domain: "thread", "core", "package"."""
        return self._r.add_msr(register, scope, transform)

    def start(self) -> None:
        self._r.start()

    def stop(self) -> None:
        self._r.stop()

    def wait(self) -> None:
        self._r.wait()

    def sample(self) -> bool:
        return self._r.sample()

    def __len__(self) -> int:
        return len(self._r)

    def handles(self) -> List[tuple]:
        """``[(name, cpus)]`` per handle."""
        return self._r.handles()

    def times(self) -> List[int]:
        return self._r.times()

    def to_csv(self) -> str:
        return self._r.csv()

    def to_numpy(self) -> Dict[str, Any]:
        """``{name: array(samples, cpus)}`` per handle (uint64), plus
        ``"time_ns"``. Handles with the same name get ``#2``, ``#3``…"""
        import numpy as np

        out: Dict[str, Any] = {}
        for h, (name, cpus) in enumerate(self._r.handles()):
            key, k = name, 2
            while key in out:
                key, k = f"{name}#{k}", k + 1
            out[key] = np.array(self._r.values(h), dtype=np.uint64).reshape(-1, len(cpus))
        out["time_ns"] = np.array(self._r.times(), dtype=np.uint64)
        return out

    def to_pandas(self):
        """Long form: one row per sample and CPU, one column per handle."""
        import io

        import pandas as pd

        return pd.read_csv(io.StringIO(self._r.csv()))


def analyze(
    path: str,
    cpu: Optional[str] = None,
    metrics: Union[str, Sequence[str], None] = None,
    tma_level: Optional[int] = None,
) -> Dict[str, Any]:
    """``pmx analyze --json PATH``: metrics (and the top-down tree with
    ``tma_level``) from a stat file pmx or perf wrote."""
    m = None if metrics is None else (metrics if isinstance(metrics, str) else ",".join(metrics))
    return json.loads(_pmx.analyze(str(path), cpu, m, tma_level))


def report(perf_data_path: str, sort: Optional[str] = None) -> List[Dict[str, Any]]:
    """``pmx report --json``'s rows for a perf.data file, every event's
    rows in one list, each with its ``event`` (sorted by ``sort`` keys,
    ``pmx report --sort``'s; default ``comm,dso,symbol``)."""
    doc = json.loads(_pmx.report(str(perf_data_path), sort))
    return [{"event": ev["name"], **row} for ev in doc["events"] for row in ev["rows"]]
