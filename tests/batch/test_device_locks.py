"""The per-GPU device lock: exclusive across processes, and `--gpus` refuses a GPU twice."""

import subprocess
import sys

import pytest

from controller.batch.devices import DeviceHold, DeviceLock, overlapping_holds, parse_gpus
from controller.cli import main
from controller.errors import ControllerError

HOLD_IN_CHILD = """
import sys, time
from controller.batch.devices import DeviceLock
lock = DeviceLock(sys.argv[1])
print("locked" if lock.acquire(blocking=False) else "refused", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_lock_held_by_another_process_is_refused_until_it_exits(device_locks):
    mine = DeviceLock("0")
    assert mine.acquire(blocking=False)
    other = subprocess.run(
        [sys.executable, "-c", HOLD_IN_CHILD, "0", "0"], capture_output=True, text=True
    )
    assert other.stdout.strip() == "refused"
    free = subprocess.run(
        [sys.executable, "-c", HOLD_IN_CHILD, "1", "0"], capture_output=True, text=True
    )
    assert free.stdout.strip() == "locked"  # another GPU is not affected
    mine.release()
    again = subprocess.run(
        [sys.executable, "-c", HOLD_IN_CHILD, "0", "0"], capture_output=True, text=True
    )
    assert again.stdout.strip() == "locked"


def test_one_gpu_listed_twice_is_refused_with_exit_2(capsys, tmp_path):
    with pytest.raises(ControllerError, match="GPU 1 is listed twice"):
        parse_gpus("0,1,1")
    code = main(["tune-all", "rms_norm", "--gpus", "0,1,0", "--runs-dir", str(tmp_path)])
    assert code == 2
    message = capsys.readouterr().err
    assert "GPU 0 is listed twice" in message and message.count("\n") == 1
    assert not any(tmp_path.iterdir())  # refused before a batch folder exists
    assert main(["tune-all", "--gpus", "0,x", "--runs-dir", str(tmp_path)]) == 2


def test_overlap_check_finds_two_holds_of_one_gpu_at_once():
    holds = [
        DeviceHold(gpu="0", operator="a", acquired=1.0, released=3.0),
        DeviceHold(gpu="1", operator="b", acquired=1.0, released=3.0),
        DeviceHold(gpu="0", operator="c", acquired=3.5, released=4.0),
    ]
    assert overlapping_holds(holds) == []
    bad = DeviceHold(gpu="0", operator="d", acquired=2.0, released=None)
    assert [(a.operator, b.operator) for a, b in overlapping_holds([*holds, bad])] == [
        ("a", "d"),
        ("c", "d"),
    ]
