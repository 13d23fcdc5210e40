"""`python -m controller.batch.child ARGS`: the controller CLI for a run a batch started, set to
get SIGTERM when the process that started it dies (Linux `PR_SET_PDEATHSIG`).

So a run never outlives its batch worker (a killed batch, a lost Ray worker): it records
itself `interrupted` and `--resume` continues it, instead of running on unwatched. Ray's raylet
may SIGKILL a dead worker's children before that: the run is then left mid-attempt, a crash
that `--resume` continues the same way."""

import ctypes
import os
import signal
import sys

PARENT_VARIABLE = "CONTROLLER_BATCH_PARENT"
PR_SET_PDEATHSIG = 1
EXIT_INTERRUPTED = 130


def stop_with_parent() -> None:
    # The batch stops a run with SIGINT: honour it even if this process inherited it ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    expected = os.environ.get(PARENT_VARIABLE)
    if expected is not None and os.getppid() != int(expected):
        sys.exit(EXIT_INTERRUPTED)  # the parent died before the request took effect


if __name__ == "__main__":
    stop_with_parent()
    from controller.cli import main

    sys.exit(main(sys.argv[1:]))
