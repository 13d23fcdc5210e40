"""Errors a user can cause in the controller (bad targets, bad run folders, changed manifests),
and the one-line description of failures that come from the machine rather than the run."""

import errno
import os
import sys

# The layers' own error types: the CLI prints them as one line; anything else is a bug.
USER_ERRORS = (
    ("controller.errors", "ControllerError"),
    ("sandbox.errors", "FenceError"),
    ("gates.errors", "GateError"),
    ("operators.errors", "OperatorError"),
)
# What ran out or broke, for the errors a full, over-quota or failing disk raises.
ENVIRONMENT_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EIO: "an I/O error on the device",
    errno.EROFS: "the file system is read-only",
}


class ControllerError(Exception):
    """A run cannot start or resume as asked; the message says what was wrong and what to do."""


class ProviderUnavailable(ControllerError):
    """The model provider cannot serve the run now: rate-limited past the pause the controller
    waits out, or the key refused. The run is left `interrupted` and resumes once the provider
    answers; the attempt in flight is withdrawn, not counted (`usage`: what it spent)."""

    def __init__(self, message: str, usage: dict | None = None) -> None:
        super().__init__(message)
        self.usage = usage


def environment_failure(error: BaseException) -> str | None:
    """One line saying what ran out and where, or None when `error` is not environmental.

    A full or failing disk and a fence that cannot start are the machine's fault, not the
    run's: such a run is left `interrupted` and resumes once the machine is fixed.
    """
    if isinstance(error, OSError) and error.errno in ENVIRONMENT_ERRNOS:
        where = error.filename or "the run folder"
        return f"{ENVIRONMENT_ERRNOS[error.errno]} writing {where}"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    for number, what in ENVIRONMENT_ERRNOS.items():  # a tool (git) that met the same fault
        if os.strerror(number) in text:
            return f"{what}: {text}"
    if isinstance(error, ProviderUnavailable):
        return str(error).strip().splitlines()[0]
    from sandbox.errors import FenceError

    if isinstance(error, FenceError):
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"the fence could not run the agent's command: {text}"
    return None


def is_user_error(error: BaseException) -> bool:
    """A layer's own error type, as opposed to a bug; only modules already imported can raise."""
    for module_name, class_name in USER_ERRORS:
        error_type = getattr(sys.modules.get(module_name), class_name, None)
        if error_type is not None and isinstance(error, error_type):
            return True
    return False
