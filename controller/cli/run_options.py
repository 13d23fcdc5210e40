"""The options every run command shares (agent, fence, limits, --resume) and how a run starts.

A flow's command (`controller register`, `controller tune`) adds these with `add_run_options`
and calls `start_or_resume` with a factory that builds its Flow from a work item; a resumed
run rebuilds the same Flow from the work item its manifest froze.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic costs ~0.2 s to import: not on every CLI start
    from controller.cli.new_run import NewRun
    from controller.runs.stored_run import StoredRun

DEFAULT_RUNS_DIR = Path("runs")
# The run-option flag of each RunLimits field, so a rejected limit names what the user typed.
LIMIT_FLAGS = {
    "max_attempts": "--max-attempts",
    "max_minutes": "--max-minutes",
    "max_tokens": "--max-tokens",
    "max_dollars": "--max-dollars",
    "max_tokens_per_attempt": "--max-tokens-per-attempt",
    "max_dollars_per_attempt": "--max-dollars-per-attempt",
    "expected_attempt_s": "--expected-attempt-seconds",
}


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Add --agent, --fence/--unfenced, the limits, --base-url, --runs-dir and --resume."""
    group = parser.add_argument_group("run options")
    group.add_argument(
        "--agent",
        metavar="SPEC",
        help="anthropic:<model>, openai:<model>, claude, codex, scripted:<file>, "
        "autotune[:<submissions>] (tune's default), template:<op>[+<agent>] or "
        "seed:<tuned/PROFILE>/<op>[+template][+<agent>]",
    )
    group.add_argument("--base-url", metavar="URL", help="API server for the agent")
    group.add_argument(
        "--fence",
        choices=("landlock", "docker"),
        default="landlock",
        help="fence for the agent's commands (default: landlock)",
    )
    group.add_argument(
        "--unfenced",
        action="store_true",
        help="run the agent without any fence (recorded in the manifest)",
    )
    group.add_argument(
        "--max-attempts",
        type=int,
        default=3,
        metavar="N",
        help="attempts for the whole run, interrupted ones included (default: 3)",
    )
    group.add_argument(
        "--max-minutes",
        type=float,
        default=60.0,
        metavar="MIN",
        help="active wall time for the whole run",
    )
    group.add_argument("--max-tokens", type=int, metavar="N", help="tokens for the whole run")
    group.add_argument("--max-dollars", type=float, metavar="USD", help="cost of the whole run")
    group.add_argument("--max-tokens-per-attempt", type=int, metavar="N")
    group.add_argument("--max-dollars-per-attempt", type=float, metavar="USD")
    group.add_argument(
        "--expected-attempt-seconds",
        dest="expected_attempt_s",
        type=float,
        metavar="S",
        help="an attempt's expected wall time before any is judged: the first is not started "
        "where it would end past --max-minutes by more than 10%% (tune-all and optimize pass "
        "the baseline's evaluation time at preflight)",
    )
    group.add_argument(
        "--runs-dir",
        type=Path,
        default=DEFAULT_RUNS_DIR,
        metavar="DIR",
        help="where run folders live (default: ./runs)",
    )
    group.add_argument(
        "--resume",
        metavar="RUN",
        help="continue an interrupted run (folder or id); other options ignored",
    )


def start_or_resume(
    arguments: argparse.Namespace,
    *,
    flow_name: str,
    make_flow: Callable[[dict[str, Any], dict[str, Any]], Any],
    new_run: Callable[[], NewRun] | None = None,
    agent: Any = None,
    check_resume: Callable[[Any, StoredRun], None] | None = None,
) -> int:
    """Create and run a new run, or verify and continue `--resume RUN`; returns the exit code.

    `make_flow(work_item, gate_settings)` builds the Flow; `new_run()` is only called for a new
    run; `check_resume(store, stored_run)` refuses a resume the flow's options contradict,
    before the identities are checked. `agent` replaces the backend the spec names (tests).
    """
    from controller.agents import make_agent
    from controller.errors import ControllerError
    from controller.runs.engine import Engine
    from controller.runs.fencing import bind_fence
    from controller.runs.launch import resume_command, verify_resumable
    from controller.runs.store import RunStore
    from controller.runs.stored_run import read_stored_run

    stored = None
    if arguments.resume:
        store = RunStore.open(arguments.resume, arguments.runs_dir)
        stored = read_stored_run(store)
        if check_resume is not None:
            check_resume(store, stored)
        manifest = verify_resumable(stored, flow=flow_name)
        if stored.state.terminal:
            print(
                f"controller: run {store.run_id} has ended; rebuilding its evidence",
                file=sys.stderr,
            )
    else:
        if not arguments.agent:
            raise ControllerError("--agent is required for a new run (e.g. --agent claude)")
        if new_run is None:
            raise ControllerError(f"`controller {flow_name}` needs --resume RUN here")
        if arguments.runs_dir.exists() and not arguments.runs_dir.is_dir():
            raise ControllerError(f"--runs-dir {arguments.runs_dir} is a file; give a folder")
        manifest = _new_manifest(arguments, flow_name, make_flow, new_run())
        store = None
    flow = make_flow(dict(manifest.work_item), dict(manifest.gate_settings))
    if list(flow.gate_names()) != list(manifest.gates):
        raise ControllerError(f"manifest field 'gates' {list(manifest.gates)} no longer matches")
    agent = agent or make_agent(manifest.agent.spec, base_url=manifest.agent.base_url)
    agent.check_available()
    if store is None and hasattr(agent, "preflight"):  # a new run: URL, key and model answer
        agent.preflight()
    fence = bind_fence(manifest.fence, Path(manifest.target))
    if store is None:
        store = RunStore.create(arguments.runs_dir, manifest)
    print(f"controller: run {store.run_id} in {store.run_dir}", file=sys.stderr)
    outcome = Engine(store, flow, agent, fence, stored=stored).run()
    reason = f": {outcome.reason}" if outcome.reason else ""
    print(f"controller: run {outcome.run_id} {outcome.state}{reason}", file=sys.stderr)
    print(f"controller: evidence in {store.evidence_dir / 'report.md'}", file=sys.stderr)
    page = store.evidence_dir / "report.html"
    if page.is_file():
        print(f"controller: review page {page}", file=sys.stderr)
    command = resume_command(flow_name, store.run_dir)
    if not store.state().terminal and command:
        print(f"controller: resume with: {command}", file=sys.stderr)
    return outcome.exit_code


def run_limits(arguments: argparse.Namespace, limits_type):
    """The limits the flags ask for; a refused value names its flag and the rule, exit 2."""
    from pydantic import ValidationError

    from controller.errors import ControllerError

    values = {field: getattr(arguments, field, None) for field in LIMIT_FLAGS}
    try:
        return limits_type(**{field: value for field, value in values.items() if value is not None})
    except ValidationError as error:
        first = error.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        flag = LIMIT_FLAGS.get(field, field)
        raise ControllerError(
            f"{flag} {values.get(field)!r}: {_rule(first)}; set it to an allowed value"
        ) from None


def _rule(error: dict) -> str:
    """A pydantic error in words: `must be at least 1`, `must be more than 0`."""
    context = error.get("ctx") or {}
    for key, words in (("ge", "at least"), ("gt", "more than"), ("le", "at most")):
        if key in context:
            return f"must be {words} {context[key]}"
    return error["msg"].lower()


def _new_manifest(arguments, flow_name, make_flow, request: NewRun):
    from controller.runs.launch import new_manifest
    from controller.runs.manifest import AgentChoice, FenceChoice, RunLimits

    limits = run_limits(arguments, RunLimits)
    flow = make_flow(dict(request.work_item), dict(request.gate_settings))
    fence_name = "none" if arguments.unfenced else arguments.fence
    return new_manifest(
        flow=flow_name,
        target=request.target,
        base_ref=request.base_ref,
        work_item=request.work_item,
        agent=AgentChoice(spec=arguments.agent, base_url=arguments.base_url),
        fence=FenceChoice(name=fence_name, unfenced=arguments.unfenced, policy=request.policy),
        limits=limits,
        gates=list(flow.gate_names()),
        gate_settings=request.gate_settings,
    )
