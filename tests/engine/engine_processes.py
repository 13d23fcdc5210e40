"""Running the engine harness as a separate process, on a private copy of the source."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from controller.runs.identity import PROMPTS_PACKAGE, SOURCE_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).resolve().parent / "engine_harness.py"


def frozen_source(destination: Path) -> Path:
    """A private copy of the controller's packages, so edits others make to the shared tree
    while the test runs do not change the source digest the runs froze."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in SOURCE_PACKAGES + (PROMPTS_PACKAGE,):
        shutil.copytree(ROOT / package, destination / package, ignore=ignore)
    return destination


def harness(*arguments, python_path, kill_at=None, environment=None):
    env = {**os.environ, "PYTHONPATH": str(python_path)}
    env.pop("CONTROLLER_TEST_KILL_AT", None)
    if kill_at is not None:
        env["CONTROLLER_TEST_KILL_AT"] = str(kill_at)
    if environment is not None:
        env["HARNESS_ENVIRONMENT"] = json.dumps(environment)
    command = [sys.executable, str(HARNESS), *map(str, arguments)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def only_run(runs_dir: Path) -> Path:
    (run_dir,) = [path for path in runs_dir.iterdir() if not path.name.startswith(".")]
    return run_dir


def harness_process(*arguments, python_path, environment=None) -> subprocess.Popen:
    """The harness started in the background, for tests that signal it."""
    env = {**os.environ, "PYTHONPATH": str(python_path)}
    env.pop("CONTROLLER_TEST_KILL_AT", None)
    if environment is not None:
        env["HARNESS_ENVIRONMENT"] = json.dumps(environment)
    command = [sys.executable, str(HARNESS), *map(str, arguments)]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
