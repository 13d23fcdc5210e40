"""An unfenced agent command runs as the controller's user: the API key must not be readable
from the controller's /proc/PID/environ, while the controller and its children keep it."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-test-custody-5b2e91"
READ_PARENT = "tr '\\0' '\\n' < /proc/$PPID/environ; echo child-sees=$ANTHROPIC_API_KEY"


def _unfenced_read(tmp_path: Path, entry: str) -> str:
    """What an unfenced command printed reading its controller's initial environment."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    command = [
        sys.executable, "-c", entry, "sandbox", "run", "--fence", "none", "--unfenced",
        "--workspace", str(workspace), "--env", "ANTHROPIC_API_KEY", "--", "bash", "-c",
        READ_PARENT,
    ]  # fmt: skip
    environment = {**os.environ, "ANTHROPIC_API_KEY": KEY, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_unfenced_command_cannot_read_the_key_from_the_controllers_environ(tmp_path):
    through_main = "import sys; from controller.cli import main; sys.exit(main(sys.argv[1:]))"
    seen = _unfenced_read(tmp_path, through_main)
    environ_lines = [line for line in seen.splitlines() if not line.startswith("child-sees=")]
    assert "ANTHROPIC_API_KEY=" + "x" * len(KEY) in environ_lines
    assert KEY not in "\n".join(environ_lines)
    assert f"child-sees={KEY}" in seen  # passed on where the allowlist says so


def test_without_the_scrub_the_key_is_readable(tmp_path):
    """The attack works on a controller that skips the scrub: the test above can fail."""
    skipping = (
        "import sys; import controller.agents.key_custody as custody; "
        "custody.scrub_initial_environment = lambda *a: []; "
        "from controller.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    assert f"ANTHROPIC_API_KEY={KEY}" in _unfenced_read(tmp_path, skipping)
