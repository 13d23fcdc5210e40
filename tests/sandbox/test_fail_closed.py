"""Fail closed: a fence that cannot be fully enforced refuses, saying why and what to pass."""

import sys

import pytest

from sandbox import linux_syscalls
from sandbox.errors import FenceError
from sandbox.fence import UNFENCED_WARNING, get_fence
from sandbox.landlock import LandlockFence
from sandbox.policy import FencePolicy, ResourceLimits
from sandbox.unfenced import Unfenced


def test_unknown_fence_is_refused():
    with pytest.raises(FenceError, match="unknown fence 'chroot'"):
        get_fence("chroot")


def test_no_fence_requires_unfenced(capsys):
    with pytest.raises(FenceError, match="--unfenced"):
        get_fence("none")
    assert UNFENCED_WARNING not in capsys.readouterr().err


def test_unfenced_warns_before_anything_runs(capsys):
    fence = get_fence("none", unfenced=True)
    assert UNFENCED_WARNING in capsys.readouterr().err
    assert isinstance(fence, Unfenced)


def test_docker_without_a_daemon_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    with pytest.raises(FenceError, match="cannot be enforced here.*--fence landlock"):
        get_fence("docker")


def test_landlock_too_old_for_tcp_rules_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(linux_syscalls, "landlock_abi", lambda: 3)
    marker = tmp_path / "ran"
    policy = FencePolicy(workspace=tmp_path, allow_tcp=(8080,))
    with pytest.raises(FenceError, match="no TCP rules"):
        LandlockFence().run(["touch", str(marker)], policy)
    assert not marker.exists()


def test_landlock_absent_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(linux_syscalls, "landlock_abi", lambda: 0)
    probe = LandlockFence().probe()
    assert not probe.available and "ABI 0" in probe.reasons[0]
    with pytest.raises(FenceError, match="cannot be enforced"):
        LandlockFence().run(["true"], FencePolicy(workspace=tmp_path))


def test_landlock_set_up_failure_runs_nothing(tmp_path):
    """A read-only mount that cannot be made aborts the launch before the command starts."""
    (tmp_path / ".git").mkdir()
    policy = FencePolicy(workspace=tmp_path, readonly_within_workspace=(tmp_path / ".git",))
    (tmp_path / ".git").rmdir()
    with pytest.raises(FenceError, match="could not be set up"):
        LandlockFence().run(["touch", str(tmp_path / "ran")], policy)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"workspace": "/nonexistent/workspace"}, "not an existing folder"),
        ({"readable": ("/nonexistent/context",)}, "does not exist"),
        ({"allow_tcp": (70000,)}, "out of range"),
        ({"allow_tcp": (0,)}, "out of range"),
        ({"readonly_within_workspace": ("/etc",)}, "not strictly inside the workspace"),
        ({"env": ("A=B",)}, "not valid"),
    ],
)
def test_bad_policies_are_refused(tmp_path, changes, message):
    values = {"workspace": tmp_path, **changes}
    with pytest.raises(FenceError, match=message):
        FencePolicy(**values)


def test_unfenced_still_times_out_and_filters_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KC_TEST_API_KEY", "sk-unfenced-secret")
    policy = FencePolicy(workspace=tmp_path, timeout_s=2, limits=ResourceLimits())
    script = "import os, time\nprint(os.environ.get('KC_TEST_API_KEY'), flush=True)\ntime.sleep(60)"
    result = Unfenced().run([sys.executable, "-c", script], policy)
    assert result.timed_out and result.returncode == 124
    assert result.stdout.strip() == "None"
