"""The Docker fence mounts each path once: a readable path that a system mount already holds
(the pyenv Python's install folder, which the agent tools add) made Docker refuse the container
with "Duplicate mount point"."""

import sys
from pathlib import Path

import pytest

from sandbox.docker_fence import DockerFence, _mounts
from sandbox.errors import FenceError
from sandbox.system_paths import python_install_paths


def test_a_readable_path_already_mounted_as_a_system_path_is_mounted_once(layout):
    install = python_install_paths()[0]
    policy = layout.policy(readable=(layout.context, install, install / "lib"))
    targets = [mount["Target"] for mount in _mounts(policy)]
    assert len(targets) == len(set(targets)), sorted(targets)
    assert str(install) in targets and str(layout.context) in targets
    assert str(install / "lib") not in targets  # inside the install mount already


def test_a_path_both_readable_and_writable_is_refused_as_a_fence_error(layout):
    policy = layout.policy(writable=(layout.outside,), readable=(layout.context, layout.outside))
    with pytest.raises(FenceError, match="both read-only and writable"):
        _mounts(policy)


@pytest.mark.docker
def test_the_fence_runs_with_the_interpreter_prefix_listed_as_readable(layout):
    policy = layout.policy(readable=(layout.context, Path(sys.base_prefix).resolve()))
    result = DockerFence().run([sys.executable, "-c", "print('fenced')"], policy)
    assert (result.returncode, result.stdout.strip()) == (0, "fenced"), result.stderr
