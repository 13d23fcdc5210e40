"""What `verify`'s fenced child watches while the profile's code runs in it.

The child times the model and writes the record its parent reads, in the process where the
profile's kernels run, so the profile's code could rewrite the timing or the writing. The
parent judges the outputs itself; the timing it takes from the record. So the child takes the
identities of everything its timing and its record rely on (the evaluator's timer and
serialisation paths, and every name of the timing and verify modules) before the profile
loads, and names what changed, and the Python threads left running, once the profile's
forwards have run and before the timing, and what changed again right after the timing
(before the profile's code runs again and could undo it) and before it writes the record;
the parent fails a profile with any. The child then leaves with `os._exit`, so no exit
hook the profile registered runs after the record is written.
"""

import sys
import threading

from gates.evaluator.detectors.identity_snapshot import IdentitySnapshot
from gates.evaluator.detectors.tampering import EVALUATOR_PATHS, TIMER_PATHS

WATCHED_MODULES = (
    "examples.paired_timing",
    "controller.verification.verify",
    "controller.verification.model_gate",
    "controller.verification.child_watch",
    "gates.evaluator.detectors.identity_snapshot",
)
"""The timing, the verify helpers the child calls, and this watch itself."""


class ChildWatch:
    """Identities and threads taken before the profile loads, compared before the record."""

    def __init__(self, main_module: str = "__main__") -> None:
        for name in WATCHED_MODULES:
            __import__(name)
        modules = [sys.modules[name] for name in (*WATCHED_MODULES, main_module)]
        self.timers = IdentitySnapshot(TIMER_PATHS, [])
        self.writers = IdentitySnapshot(EVALUATOR_PATHS, modules)
        self.threads = {thread.ident for thread in threading.enumerate()}

    def findings(self, threads: bool = True) -> list[str]:
        """One line per thing changed since the snapshot (empty when nothing did); `threads`
        also names Python threads started since (not after the timing, whose compiled
        baseline may start its own)."""
        found = []
        changed = self.timers.changed() + self.writers.changed()
        if changed:
            found.append(f"the profile's code replaced {', '.join(changed[:4])}")
        if threads:
            extra = [t.name for t in threading.enumerate() if t.ident not in self.threads]
            if extra:
                found.append(f"the profile's code left threads running: {', '.join(extra[:4])}")
        return found
