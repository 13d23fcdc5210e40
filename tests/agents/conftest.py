"""Fixtures for agent tests: a loopback protocol server, a workspace and the fence around it."""

from __future__ import annotations

import subprocess

import pytest

from controller.agents import AgentLimits, AgentSession
from sandbox.fence import get_fence
from sandbox.policy import FencePolicy
from tests.agents.protocol_server import ProtocolServer

SECRET_KEY = "sk-test-secret-4f1c9a"


@pytest.fixture
def server():
    with ProtocolServer() as running:
        yield running


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "kernel.py").write_text("BLOCK = 64\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def fence_and_policy(workspace):
    """The real Landlock fence around the workspace (no network, default limits)."""
    return get_fence("landlock"), FencePolicy(workspace=workspace, timeout_s=60)


@pytest.fixture
def make_session(workspace, fence_and_policy):
    fence, policy = fence_and_policy

    def build(prompt: str = "Raise BLOCK to 128.", attempt: int = 1, **limits) -> AgentSession:
        return AgentSession(
            workspace=workspace,
            prompt=prompt,
            context=(),
            fence=fence,
            policy=policy,
            limits=AgentLimits(**limits),
            attempt=attempt,
        )

    return build
