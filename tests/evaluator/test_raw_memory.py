"""ctypes from the solution's files is refused: the audited calls (`addressof`, buffers,
`from_address`) through the audit hook, and `memmove`/`memset`, which take plain addresses
and raise no audit event, through wrappers. The evaluator's own ctypes use is untouched."""

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import ctypes, pkgutil, runpy, sys  # run_path imports pkgutil: loaded before arming
from gates.evaluator.detectors.introspection import AuditMonitor

solution = sys.argv[1]
monitor = AuditMonitor([solution], [])
monitor.armed = True
ctypes.memmove(ctypes.addressof(ctypes.c_int(1)), ctypes.addressof(ctypes.c_int(2)), 4)
print("evaluator's own ctypes:", len(monitor.findings))
try:
    runpy.run_path(solution + "/cheat.py")
except PermissionError as error:
    print("refused:", error)
print("findings:", [type(f).__name__ + ": " + f.reason for f in monitor.findings])
"""


def _run(tmp_path: Path, cheat: str) -> str:
    (tmp_path / "cheat.py").write_text(cheat)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    return done.stdout + done.stderr


def test_an_audited_ctypes_call_from_the_solution_is_refused(tmp_path):
    output = _run(tmp_path, "import ctypes\nbuffer = ctypes.create_string_buffer(8)\n")
    assert "evaluator's own ctypes: 0" in output, output
    assert "refused" in output and "RawMemoryAccess: ctypes.create_string_buffer" in output


def test_memmove_from_the_solution_is_refused(tmp_path):
    cheat = "import ctypes\nsource = b'12345678'\nctypes.memmove(id(source), id(source), 8)\n"
    output = _run(tmp_path, cheat)
    assert "refused" in output and "RawMemoryAccess: ctypes.memmove" in output, output


def test_process_memory_is_refused_by_every_path_tried(tmp_path):
    cheat = """
import os
attempts = {
    "thread view": lambda: open("/proc/thread-self/mem", "rb"),
    "task view": lambda: open(f"/proc/self/task/{os.getpid()}/mem", "rb"),
    "proc folder descriptor": lambda: os.open("/proc/self", os.O_RDONLY),
    "root descriptor": lambda: os.open(
        "proc/self/mem", os.O_RDONLY, dir_fd=os.open("/", os.O_RDONLY)
    ),
    "symlink": lambda: os.symlink("/proc/self/mem", os.path.join(os.path.dirname(__file__), "m")),
}
for name, attempt in attempts.items():
    try:
        attempt()
        print("opened:", name)
    except PermissionError:
        print("refused:", name)
print("status readable:", bool(open("/proc/self/status").read()))
print("tasks listed:", bool(os.listdir("/proc/self/task")))
"""
    output = _run(tmp_path, cheat)
    assert "opened:" not in output, output
    assert output.count("refused:") == 5, output
    assert "status readable: True" in output and "tasks listed: True" in output, output
