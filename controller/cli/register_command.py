"""`controller register run|demo`: register an operator in a target through an agent.

`run` starts (or `--resume`s) a register run on a target repository; `demo` runs the bundled
scripted session on a scratch copy of this repository's example target, offline.
"""

import argparse
import datetime
import json
import re
import shutil
import sys
from pathlib import Path

from controller.cli.run_options import DEFAULT_RUNS_DIR, add_run_options

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO_SESSION = REPOSITORY / "examples" / "sessions" / "register_gelu_tanh.json"
DEMO_OPERATOR = "gelu_tanh"
DEMO_CALL_SITES = (
    "examples/vision.py:VisionBlock.forward",
    "examples/vision.py:VisionProjector.forward",
)
DEMO_FILES = (
    "pyproject.toml",
    "operators",
    "examples",
    "tests/conftest.py",
    "tests/registry",
    "tuned",
)
OPERATOR_NAME = re.compile(r"[a-z][a-z0-9_]*")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache", "runs")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "register",
        help="register an operator and route call sites through the registry, via an agent",
        description=__doc__.splitlines()[0],
    )
    actions = parser.add_subparsers(dest="register_action", metavar="ACTION", required=True)
    run = actions.add_parser(
        "run",
        help="start or resume a register run on a target repository",
        description="Start a register run (or --resume one); on acceptance a review branch "
        "controller/register/<op>/<run-id> is created in the target, never pushed.",
    )
    run.add_argument("--operator", metavar="NAME", help="operator to register, e.g. gelu_tanh")
    run.add_argument(
        "--call-site",
        dest="call_sites",
        action="append",
        default=[],
        metavar="PATH:QUALNAME",
        help="function to route through the registry (repeatable)",
    )
    run.add_argument(
        "--target", type=Path, default=Path("."), metavar="DIR", help="target git repository"
    )
    run.add_argument(
        "--all-gates",
        action="store_true",
        help="run every gate even after a cheap one failed (slower; fuller feedback)",
    )
    add_run_options(run)
    run.set_defaults(func=run_register)
    demo = actions.add_parser(
        "demo",
        help="register gelu_tanh in a scratch copy of the example target (scripted, offline)",
        description="Register gelu_tanh for the example model's vision MLP in a scratch copy of "
        "the example target, with a scripted agent: attempt 1 forgets a call site and is "
        "rejected with feedback, attempt 2 passes every gate. Prints where the review branch "
        "and the evidence are.",
    )
    demo.add_argument("--fence", choices=("landlock", "docker"), default="landlock")
    demo.add_argument("--unfenced", action="store_true", help="run without any fence")
    demo.add_argument("--runs-dir", type=Path, default=DEFAULT_RUNS_DIR, metavar="DIR")
    demo.set_defaults(func=run_demo)


def run_register(arguments: argparse.Namespace, agent=None) -> int:
    """Refuse a bad request with one line, else run the register flow to its end."""
    from controller.cli.run_options import start_or_resume

    def make_flow(work_item, gate_settings):  # imports torch: only once the request is checked
        from controller.flows.register import RegisterFlow

        return RegisterFlow(work_item, gate_settings)

    return start_or_resume(
        arguments,
        flow_name="register",
        make_flow=make_flow,
        new_run=lambda: new_register_run(arguments),
        agent=agent,
    )


def new_register_run(arguments: argparse.Namespace):
    """Check the target and the request before anything is created."""
    from controller.cli.new_run import NewRun
    from controller.errors import ControllerError
    from gates.registration.call_sites import CallSite, require_call_sites
    from gates.registration.declared import declared_operators
    from gates.target import load_target_config

    if not arguments.operator:
        raise ControllerError("--operator NAME is required for a new register run")
    if not OPERATOR_NAME.fullmatch(arguments.operator):
        raise ControllerError(
            f"--operator {arguments.operator!r}: an operator name is lower snake_case (a letter, "
            "then letters, digits or _), named by its maths, e.g. gelu_tanh"
        )
    if not arguments.call_sites:
        raise ControllerError("give at least one --call-site PATH:QUALNAME")
    sites = [CallSite.parse(text) for text in arguments.call_sites]
    target = arguments.target.resolve()
    if not (target / ".git").exists():
        raise ControllerError(f"{target} is not a git repository; pass --target DIR")
    dirty = _git(target, "status", "--porcelain", "--untracked-files=no")
    if dirty.strip():
        first = dirty.strip().splitlines()[0]
        raise ControllerError(
            f"target {target} has uncommitted changes ({first.strip()}); commit or stash them"
        )
    config = load_target_config(target)
    require_call_sites(target, sites)
    if arguments.operator in declared_operators(target, config):
        raise ControllerError(
            f"operator {arguments.operator!r} is already registered in {config.registry_module}"
        )
    return NewRun(
        target=target,
        work_item={"operator": arguments.operator, "call_sites": [str(s) for s in sites]},
        gate_settings={"all_gates": bool(getattr(arguments, "all_gates", False))},
    )


def run_demo(arguments: argparse.Namespace) -> int:
    """Copy the example target into a scratch repository and run the scripted session there."""
    runs_dir = arguments.runs_dir.resolve()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S%f")
    scratch = runs_dir / f"demo-target-{stamp}"
    make_scratch_target(REPOSITORY, scratch)
    print(f"controller: demo target (one commit) in {scratch}", file=sys.stderr)
    run_arguments = argparse.Namespace(
        operator=DEMO_OPERATOR,
        call_sites=list(DEMO_CALL_SITES),
        target=scratch,
        agent=f"scripted:{DEMO_SESSION}",
        base_url=None,
        fence=arguments.fence,
        unfenced=arguments.unfenced,
        max_attempts=3,
        max_minutes=30.0,
        max_tokens=None,
        max_dollars=None,
        max_tokens_per_attempt=None,
        max_dollars_per_attempt=None,
        runs_dir=runs_dir,
        resume=None,
    )
    code = run_register(run_arguments)
    for manifest in sorted(runs_dir.glob("register-*/manifest.json")):
        stored = json.loads(manifest.read_text())
        if stored.get("manifest", stored).get("target") == str(scratch):
            published = manifest.parent / "publish.json"
            if published.is_file():
                branch = json.loads(published.read_text())["branch"]
                print(f"controller: branch {branch} in {scratch}")
                print(f"controller: see it with: git -C {scratch} show --stat {branch}")
    return code


def make_scratch_target(source: Path, scratch: Path) -> Path:
    """A single-commit git repository holding the example target's files from `source`."""
    scratch.mkdir(parents=True)
    for name in DEMO_FILES:
        origin = source / name
        if origin.is_dir():
            shutil.copytree(origin, scratch / name, ignore=IGNORED)
        elif origin.is_file():
            (scratch / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(origin, scratch / name)
    _git(scratch, "init", "--quiet", "--initial-branch=main")
    _git(scratch, "add", "--all")
    _git(scratch, "commit", "--quiet", "--no-verify", "-m", "Example target for the register demo")
    return scratch


def _git(repo: Path, *arguments: str) -> str:
    from controller.gitrepo import CONTROLLER_IDENTITY, git

    return git(repo, *arguments, env=CONTROLLER_IDENTITY)
