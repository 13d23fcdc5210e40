"""Shared test setup: skip `gpu` tests without CUDA and `docker` tests without a daemon."""

import functools
import shutil
import subprocess

import pytest


@functools.cache
def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


@functools.cache
def docker_daemon_problem() -> str | None:
    """None when a Docker daemon answers, else why not."""
    if shutil.which("docker") is None:
        return "no docker client on PATH"
    try:
        result = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as error:
        return f"docker info failed: {error}"
    if result.returncode != 0:
        return "no Docker daemon answers `docker info`"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" in item.keywords and not _cuda_available():
            item.add_marker(pytest.mark.skip(reason="needs CUDA (run on the GPU machine)"))
        if "docker" in item.keywords:
            problem = docker_daemon_problem()
            if problem:
                item.add_marker(pytest.mark.skip(reason=f"Docker tests skipped: {problem}"))
