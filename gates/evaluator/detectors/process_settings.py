"""Process-wide settings the reference roles compile and run under: the environment and
Triton's knobs.

On CUDA the baseline's (and incumbent's) kernels compile in the candidate's process after the
solution is imported, and Triton reads its options from the environment and its knobs at
compile time (`DISABLE_LLVM_OPT`, for one, compiles without LLVM's optimisations). A solution
that changed them would slow the roles it is compared with instead of being fast itself. The
settings are copied just before the import and compared at every environment check; the
solution's own kernels need neither.
"""

import os
import sys

from gates.evaluator.detectors import CheatDetected


class SettingsChanged(CheatDetected):
    """The solution changed process-wide settings (environment variables, Triton knobs) that
    the reference roles compile or run under."""


def _knob_namespaces() -> dict[str, dict]:
    """Each Triton knob namespace's overrides (its instance dict), by name."""
    knobs = sys.modules.get("triton.knobs")
    base = getattr(knobs, "base_knobs", None)
    if base is None:
        return {}
    return {
        name: value.__dict__
        for name, value in vars(knobs).items()
        if isinstance(value, base) and not name.startswith("_")
    }


class ProcessSettings:
    """The environment and the knob overrides as they were; `check` names what changed."""

    def __init__(self) -> None:
        self.environment = dict(os.environ)
        self.knobs = {name: dict(overrides) for name, overrides in _knob_namespaces().items()}

    def check(self, when: str) -> None:
        changed = _changed(dict(os.environ), self.environment)
        if changed:
            raise SettingsChanged(f"environment variables {changed} changed {when}")
        now = {name: dict(overrides) for name, overrides in _knob_namespaces().items()}
        changed = _changed(now, self.knobs)
        if changed:
            raise SettingsChanged(f"Triton knobs of {changed} changed {when}")


def _changed(now: dict, before: dict) -> list[str]:
    """The first few keys whose value differs (added and removed ones too)."""
    if now == before:
        return []
    return sorted(key for key in set(now) | set(before) if now.get(key) != before.get(key))[:4]
