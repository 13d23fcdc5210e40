"""What the CLI backends share: finding the executable and launching it inside the fence."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from controller.agents.base import AgentSession
from controller.agents.fence_toolbelt import with_project_tools, write_login_profile
from controller.agents.tools import updated_policy
from controller.errors import ControllerError

REPO_ROOT = Path(__file__).resolve().parents[2]


def find_cli(name: str, explicit: str | Path | None = None) -> Path | None:
    """The CLI on PATH, else the copy `scripts/setup` installs under `.tools/`, else None."""
    if explicit is not None:
        path = Path(explicit)
        return path if path.is_file() else None
    found = shutil.which(name)
    if found:
        return Path(found)
    local = REPO_ROOT / ".tools" / "node_modules" / ".bin" / name
    return local if local.exists() else None


def require_cli(name: str, explicit: str | Path | None, spec: str) -> Path:
    """The CLI's path, or a one-line ControllerError saying how to install it."""
    path = find_cli(name, explicit)
    if path is None:
        raise ControllerError(
            f"agent {spec} needs the `{name}` CLI on PATH or in .tools/ (run scripts/setup)"
        )
    return path


def install_root(executable: Path) -> Path:
    """The folder the fence must let the CLI read: its node_modules tree, or its own folder."""
    resolved = executable.resolve()
    for parent in resolved.parents:
        if parent.name == "node_modules":
            return parent
    return resolved.parent


class CliLaunch:
    """A fenced launch of a CLI agent: a private home folder, and TCP only to the key proxy."""

    def __init__(self, session: AgentSession, executable: Path, proxy_port: int):
        self.session = session
        self.executable = executable
        self.home = Path(tempfile.mkdtemp(prefix="agent-home-"))
        root = install_root(executable)
        policy = session.policy
        self.policy = with_project_tools(
            updated_policy(
                policy,
                readable=_merged(policy.readable, [root, *session.context]),
                writable=_merged(policy.writable, [self.home]),
                allow_tcp=(proxy_port,),
                timeout_s=session.limits.wall_s,
            ),
            scratch=session.scratch,
            first_on_path=executable.parent,
        )
        write_login_profile(self.home, self.policy.env_values["PATH"])

    def run(self, argv: list[str], env_values: dict[str, str], stdin: str = ""):
        """Run the CLI in the fence with exactly these variables (plus HOME and PATH: its own
        folder, then the project's tools, then the system's)."""
        values = {"HOME": str(self.home), **env_values}
        policy = self.policy.model_copy(update={"env_values": {**self.policy.env_values, **values}})
        try:
            return self.session.fence.run(
                [str(self.executable), *argv], policy, stdin=stdin, cwd=self.session.workspace
            )
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


def json_lines(text: str | bytes | None) -> tuple[list[dict], list[str]]:
    """Parse a JSON-lines stream into events, keeping lines that were not JSON objects apart."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    events, stray = [], []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            stray.append(line)
            continue
        if isinstance(event, dict):
            events.append(event)
        else:
            stray.append(line)
    return events, stray


def _merged(existing, extra) -> tuple[Path, ...]:
    merged = list(existing)
    for path in extra:
        if path not in merged:
            merged.append(Path(path))
    return tuple(merged)
