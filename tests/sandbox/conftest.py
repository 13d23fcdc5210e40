"""Fixtures for the fence tests: a run layout with a workspace, context and things to protect."""

import os
import secrets
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox.fence import get_fence
from sandbox.policy import FencePolicy, ResourceLimits

FENCES = ["landlock", pytest.param("docker", marks=pytest.mark.docker)]


@dataclass
class Layout:
    """Folders of one fenced run and its neighbours, all under a test's tmp_path."""

    workspace: Path
    context: Path
    outside: Path
    victim: Path
    other_run_secret: Path
    home_secret: Path

    def policy(self, **changes) -> FencePolicy:
        values = {
            "workspace": self.workspace,
            "readable": (self.context,),
            "timeout_s": 30,
            "limits": ResourceLimits(memory_mb=1024, processes=128),
        }
        values.update(changes)
        return FencePolicy(**values)


@pytest.fixture
def layout(tmp_path):
    runs = tmp_path / "runs"
    workspace = runs / "this-run" / "workspace"
    context = tmp_path / "context"
    outside = tmp_path / "outside"
    for folder in (workspace, context, outside, runs / "other-run"):
        folder.mkdir(parents=True)
    (context / "notes.txt").write_text("context-for-the-agent\n")
    victim = outside / "victim.txt"
    victim.write_text("original\n")
    other_run_secret = runs / "other-run" / "secret.json"
    other_run_secret.write_text('{"token": "other-run-secret-7731"}\n')
    home_folder = Path.home() / f".kc-fence-test-{secrets.token_hex(4)}"
    home_folder.mkdir()
    home_secret = home_folder / "credentials"
    home_secret.write_text("home-secret-4419\n")
    try:
        yield Layout(workspace, context, outside, victim, other_run_secret, home_secret)
    finally:
        shutil.rmtree(home_folder, ignore_errors=True)


@pytest.fixture(params=FENCES)
def fence(request):
    return get_fence(request.param)


@pytest.fixture
def python_in_fence(fence):
    """Run a Python script inside the fence with the interpreter the fence grants."""

    def run(policy: FencePolicy, script: str, stdin: str | None = None):
        return fence.run([sys.executable, "-c", script], policy, stdin=stdin)

    return run


@pytest.fixture
def processes_with_marker():
    return find_processes_with_marker


def find_processes_with_marker(marker: str) -> list[int]:
    """Host PIDs whose command line contains marker (checked from outside every fence)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found
