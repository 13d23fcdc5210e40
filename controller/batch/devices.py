"""One host's GPUs: the `--gpus` list, a per-GPU device lock and the record of who held which.

The lock is an exclusive `flock` on a file per GPU in a host-wide folder, so no two processes
(two workers of one batch, or two batches) can hold one GPU at once. The worker passes the
locked descriptor to its run's process, so the lock stays held as long as either lives.
Every hold is appended to `device-holds.jsonl` in the batch folder (acquired, then released),
so a reviewer can check that no two runs, and so no two evaluations, timed on one GPU at once.
"""

import fcntl
import json
import os
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from controller.errors import ControllerError

HOLDS_FILE = "device-holds.jsonl"
LOCKS_VARIABLE = "CONTROLLER_DEVICE_LOCKS"
DEFAULT_LOCKS = Path("/tmp/kernel-controller-device-locks")


def parse_gpus(text: str) -> list[str]:
    """`0,1,3` as ['0', '1', '3']; a GPU listed twice or a non-index is refused (exit 2)."""
    gpus = [part.strip() for part in text.split(",")]
    for gpu in gpus:
        if not gpu.isdigit():
            raise ControllerError(
                f"--gpus {text!r}: {gpu!r} is not a GPU index; give indices like 0,1,2"
            )
    repeated = sorted({gpu for gpu in gpus if gpus.count(gpu) > 1}, key=int)
    if repeated:
        raise ControllerError(
            f"--gpus {text!r}: GPU {', '.join(repeated)} is listed twice; each GPU runs one "
            "worker, so list each once"
        )
    return gpus


def locks_folder() -> Path:
    return Path(os.environ.get(LOCKS_VARIABLE) or DEFAULT_LOCKS)


class DeviceLock:
    """An exclusive lock on one GPU, held from `acquire` until `release` (and by any process
    the descriptor was passed to)."""

    def __init__(self, gpu: str, folder: Path | None = None) -> None:
        self.gpu = gpu
        self.path = (folder or locks_folder()) / f"gpu-{gpu}.lock"
        self.descriptor: int | None = None

    def acquire(self, blocking: bool = True) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(descriptor)
            return False
        self.descriptor = descriptor
        return True

    def release(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None


class DeviceHold(BaseModel):
    """One run's hold of one GPU, from its two records in `device-holds.jsonl`."""

    model_config = ConfigDict(frozen=True)

    gpu: str
    operator: str
    acquired: float
    released: float | None = None


def record_hold(batch: Path, event: str, gpu: str, operator: str, pid: int | None = None) -> None:
    """Append `acquired` or `released` for one GPU and operator (and the process holding it),
    synced before going on."""
    fields = {"event": event, "gpu": gpu, "operator": operator, "time": time.time()}
    line = json.dumps(fields | ({"pid": pid} if pid is not None else {}))
    with open(batch / HOLDS_FILE, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_holds(batch: Path) -> list[DeviceHold]:
    """Every hold, in the order taken; one never released has `released` None."""
    path = batch / HOLDS_FILE
    holds: list[DeviceHold] = []
    open_holds: dict[tuple[str, str], int] = {}
    if not path.is_file():
        return holds
    for line in path.read_text().splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line torn by a crash
        key = (event["gpu"], event["operator"])
        if event["event"] == "acquired":
            open_holds[key] = len(holds)
            holds.append(DeviceHold(gpu=key[0], operator=key[1], acquired=event["time"]))
        elif key in open_holds:
            index = open_holds.pop(key)
            holds[index] = holds[index].model_copy(update={"released": event["time"]})
    return holds


def overlapping_holds(holds: list[DeviceHold]) -> list[tuple[DeviceHold, DeviceHold]]:
    """Pairs of holds of one GPU whose intervals overlap (an open hold lasts forever)."""
    pairs = []
    for index, first in enumerate(holds):
        for second in holds[index + 1 :]:
            if first.gpu != second.gpu:
                continue
            first_end = first.released if first.released is not None else float("inf")
            second_end = second.released if second.released is not None else float("inf")
            if first.acquired < second_end and second.acquired < first_end:
                pairs.append((first, second))
    return pairs
