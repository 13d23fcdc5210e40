"""Check CUDA inside the Landlock fence with `gpu=True`, and say why if it fails (GPU machine).

Runs a CUDA matmul fenced as shipped; if that fails, reruns it with each GPU-only hardening
switched off in a copy of the launcher (global /proc read-only, host sequenced-packet
listeners hidden) to find the culprit, and prints the kernel's Landlock audit lines. With
`strace` installed it also lists the /proc files CUDA opens for writing.
Run from the repository root: `python benchmarks/fence_gpu_diagnosis.py`.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sandbox.landlock as landlock_module  # noqa: E402
from sandbox.fence import get_fence  # noqa: E402
from sandbox.policy import FencePolicy  # noqa: E402

CHECK = """
import torch
x = torch.randn(256, 256, device="cuda")
print("gpu-ok", torch.cuda.get_device_name(), float((x @ x).abs().sum()) > 0)
"""
ORIGINAL_LAUNCHER = landlock_module.LAUNCHER
ORIGINAL_LISTENERS = landlock_module.host_seqpacket_listeners
HARDENINGS = {
    "global /proc writable": ('    if config["gpu"]:\n        _lock_global_proc()\n', ""),
}


def attempt(label: str, workspace: Path, argv: list[str]) -> bool:
    policy = FencePolicy(workspace=workspace, gpu=True, timeout_s=300)
    result = get_fence("landlock").run(argv, policy)
    ok = result.returncode == 0 and "gpu-ok" in result.stdout
    tail = (result.stderr.strip().splitlines() or [""])[-1][:200]
    print(f"{label:<32} {'PASS' if ok else 'FAIL'} rc={result.returncode} {tail}", flush=True)
    return ok


def launcher_without(name: str) -> Path:
    """A copy of the launcher with one hardening switched off."""
    old, new = HARDENINGS[name]
    source = ORIGINAL_LAUNCHER.read_text()
    assert old in source, name
    path = ORIGINAL_LAUNCHER.with_name("_diagnosis_launcher.py")
    path.write_text(source.replace(old, new))
    return path


def landlock_audit_lines() -> list[str]:
    try:
        log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ["(dmesg not readable)"]
    return [line for line in log.splitlines() if "landlock" in line.lower()][-20:]


def proc_writes_under_strace(workspace: Path) -> None:
    """List the /proc files the check opens for writing, traced inside the fence."""
    strace = shutil.which("strace")
    if strace is None:
        print("strace not installed: /proc writes not listed")
        return
    trace = workspace / "trace.txt"
    argv = [strace, "-f", "-qq", "-e", "trace=open,openat", "-o", str(trace)]
    attempt("under strace", workspace, [*argv, sys.executable, "check.py"])
    if trace.exists():
        for line in trace.read_text(errors="replace").splitlines():
            if "/proc" in line and ("O_WRONLY" in line or "O_RDWR" in line):
                print("  ", line[:200])


def main() -> int:
    workspace = Path(tempfile.mkdtemp(prefix="fence-gpu-"))
    (workspace / "check.py").write_text(CHECK)
    argv = [sys.executable, "check.py"]
    passed = attempt("as shipped", workspace, argv)
    proc_writes_under_strace(workspace)
    if passed:
        return 0
    for name in HARDENINGS:
        landlock_module.LAUNCHER = launcher_without(name)
        try:
            attempt(f"without: {name}", workspace, argv)
        finally:
            landlock_module.LAUNCHER.unlink()
            landlock_module.LAUNCHER = ORIGINAL_LAUNCHER
    landlock_module.host_seqpacket_listeners = lambda: []
    attempt("without: host listeners hidden", workspace, argv)
    landlock_module.host_seqpacket_listeners = ORIGINAL_LISTENERS
    print("Landlock audit lines:", *landlock_audit_lines(), sep="\n  ")
    return 1


if __name__ == "__main__":
    sys.exit(main())
