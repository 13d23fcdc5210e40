"""Runs the real engine with the tiny flow in a process of its own, so tests can kill it.

    python engine_harness.py start RUNS_DIR TARGET [--good-from N] [--sleep S] [--max-attempts N]
    python engine_harness.py resume RUN_DIR [--sleep S]

HARNESS_ENVIRONMENT (JSON) stands in for the environment identity, so no torch import is needed.
Exit codes follow the CLI: the run's code, or 2 for a refusal (ControllerError).
"""

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_fixtures import (  # noqa: E402
    TEST_ENVIRONMENT,
    GreetingAgent,
    TinyFlow,
    double_fence,
    new_tiny_run,
)

from controller.errors import ControllerError  # noqa: E402
from controller.runs.engine import Engine  # noqa: E402
from controller.runs.launch import verify_resumable  # noqa: E402
from controller.runs.progress import Progress  # noqa: E402
from controller.runs.store import RunStore  # noqa: E402
from controller.runs.stored_run import read_stored_run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["start", "resume"])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--good-from", type=int, default=2)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--max-attempts", type=int, default=4)
    arguments = parser.parse_args()
    environment = json.loads(os.environ.get("HARNESS_ENVIRONMENT", json.dumps(TEST_ENVIRONMENT)))
    try:
        if arguments.action == "start":
            runs_dir, target = arguments.paths
            store = new_tiny_run(runs_dir, target, environment, max_attempts=arguments.max_attempts)
        else:
            store = RunStore.open(arguments.paths[0])
            verify_resumable(read_stored_run(store), flow="tiny", environment=environment)
        agent = GreetingAgent(good_from=arguments.good_from, sleep_s=arguments.sleep)
        engine = Engine(store, TinyFlow(), agent, double_fence(store.run_dir), Progress(False))
        outcome = engine.run()
    except ControllerError as error:
        print(f"controller: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"state": outcome.state, "run_dir": str(outcome.run_dir)}))
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
