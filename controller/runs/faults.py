"""Fault points: a named seam at every write a run makes and every state transition it takes.

Inert unless a test sets `CONTROLLER_TEST_FAULT=<FAULT>@<label>`: the first point with that
label then fails as the disk or the operator would make it fail. FAULT is ENOSPC, EDQUOT or EIO
(an OSError naming the file, as a full or broken disk raises it) or SIGKILL or SIGTERM (sent to
this process). `CONTROLLER_TEST_FAULT_LOG=<file>` appends the label of every point passed before
the fault and the fault's own point marked `! `, so the reliability suite can discover every
point of a run and fail each in turn.
Nothing else reads these variables.
"""

import errno
import os
import signal
from pathlib import Path

FAULT_VARIABLE = "CONTROLLER_TEST_FAULT"
LOG_VARIABLE = "CONTROLLER_TEST_FAULT_LOG"
DISK_FAULTS = {"ENOSPC": errno.ENOSPC, "EDQUOT": errno.EDQUOT, "EIO": errno.EIO}
FIRED_MARK = "! "  # a logged line for the point where the fault fired
SIGNAL_FAULTS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM}

_fired: set[str] = set()


def rearm() -> None:
    """Let every plan fire again: for tests that run several processes' work in one."""
    _fired.clear()


def fault_point(label: str, path: Path | str | None = None) -> None:
    """Pass the point `label` (about to write `path`), failing it if the test plan says so."""
    plan = os.environ.get(FAULT_VARIABLE, "")
    log = os.environ.get(LOG_VARIABLE, "")
    if (not plan and not log) or plan in _fired:
        return
    fault, _, target = plan.partition("@")
    if plan and target == label:
        _fired.add(plan)
        _log(log, f"{FIRED_MARK}{label}")
        _inject(fault, path if path is not None else label)
        return
    _log(log, label)


def _log(log: str, line: str) -> None:
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _inject(fault: str, path: Path | str) -> None:
    if fault in DISK_FAULTS:
        number = DISK_FAULTS[fault]
        raise OSError(number, os.strerror(number), str(path))
    if fault in SIGNAL_FAULTS:
        os.kill(os.getpid(), SIGNAL_FAULTS[fault])
        return
    raise ValueError(
        f"{FAULT_VARIABLE}: unknown fault {fault!r}; use one of "
        f"{', '.join([*DISK_FAULTS, *SIGNAL_FAULTS])}"
    )
