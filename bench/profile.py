"""Optional sampling profiles of the measured processes (BENCH_PROFILE=1), with py-spy.

Off by default: py-spy takes CPU from the same two cores, so profiled runs are for finding where the
time goes, not for the table. Each profile is py-spy's raw (collapsed) stacks plus a summary of the
functions holding the most samples, written to bench/results/profiles/.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bench.report import RESULTS

PROFILES = RESULTS / "profiles"


def wanted(name: str, default: bool) -> bool:
    """Whether to profile the phase `name`: BENCH_PROFILE=1 profiles the default ones (http-x8, direct-x8,
    relay-x2); a comma list names phases (e.g. BENCH_PROFILE=http-x32,relay-x4)."""
    value = os.environ.get("BENCH_PROFILE", "").strip()
    if value in ("", "0"):
        return False
    return default if value == "1" else name in {v.strip() for v in value.split(",")}


def _py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        raise SystemExit("BENCH_PROFILE needs py-spy (pinned in requirements.txt)")
    return found


# Two views of the same processes: "wall" samples every thread that is not idle, which counts a thread
# waiting on Postgres's socket too (psycopg waits in C, where py-spy cannot tell it idle); "gil" samples
# only the thread holding the GIL, which is where the process's Python CPU goes.
VIEWS = {"wall": [], "gil": ["--gil"]}


def start(name: str, pids: list[int]) -> list[tuple[subprocess.Popen, Path, str]]:
    """Two `py-spy record` per process (children included, for gunicorn's workers); stop with finish()."""
    PROFILES.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    recorders = []
    for pid in pids:
        for view, flags in VIEWS.items():
            out = PROFILES / f"{stamp}-{name}-{view}-{pid}.folded"
            proc = subprocess.Popen(
                [
                    _py_spy(),
                    "record",
                    "--pid",
                    str(pid),
                    "--subprocesses",
                    *flags,
                    "--format",
                    "raw",
                    "--rate",
                    "100",
                    "--nonblocking",
                    "--output",
                    str(out),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            recorders.append((proc, out, view))
    return recorders


def finish(name: str, recorders: list[tuple[subprocess.Popen, Path, str]]) -> Path | None:
    """Stop the recorders (SIGINT makes py-spy write its file) and write one summary of both views; return its path."""
    for proc, _, _ in recorders:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
    stacks: dict[str, Counter] = {view: Counter() for view in VIEWS}
    for proc, out, view in recorders:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        if out.exists():
            for line in out.read_text().splitlines():
                frames, _, count = line.rpartition(" ")
                if count.isdigit():
                    stacks[view][frames] += int(count)
    if not any(stacks.values()):
        return None
    summary = PROFILES / f"{time.strftime('%Y%m%dT%H%M%S')}-{name}-summary.txt"
    summary.write_text(
        "\n".join(f"== {view}: {VIEW_TITLES[view]}\n{summarise(counter)}" for view, counter in stacks.items() if counter)
    )
    print(f"[bench]   profile of {name}: {summary.relative_to(RESULTS.parent.parent)}", flush=True)
    return summary


VIEW_TITLES = {
    "wall": "threads not idle, waits on Postgres included",
    "gil": "the thread holding the GIL: the process's Python CPU",
}


def summarise(stacks: Counter, top: int = 40) -> str:
    """The functions with the most samples: on the stack (inclusive) and on top of it (self)."""
    total = sum(stacks.values())
    inclusive, own = Counter(), Counter()
    for frames, count in stacks.items():
        names = [_frame(f) for f in frames.split(";") if f]
        for name in set(names):
            inclusive[name] += count
        if names:
            own[names[-1]] += count
    lines = [f"{total} samples"]
    for title, counter in (("inclusive (on the stack)", inclusive), ("self (on top of the stack)", own)):
        lines += ["", title]
        lines += [f"{count / total * 100:6.1f} %  {name}" for name, count in counter.most_common(top)]
    return "\n".join(lines) + "\n"


def _frame(frame: str) -> str:
    # "function (path/to/file.py:123)" → "function (file.py)": lines of one function are added together.
    function, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    return f"{function} ({'/'.join(Path(path).parts[-2:])})" if path else function


@contextlib.contextmanager
def maybe(name: str, pids: list[int], default: bool = False):
    """Profile these processes for the duration of the block when BENCH_PROFILE wants this phase."""
    if not wanted(name, default):
        yield
        return
    recorders = start(name, pids)
    try:
        yield
    finally:
        finish(name, recorders)
