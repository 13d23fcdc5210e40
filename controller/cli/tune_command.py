"""`controller tune run`: improve an operator's kernel attempt by attempt, or `--resume RUN`.

The agent defaults to `autotune` (no model: it searches the launch settings the kernel
declares). On `--resume`, options that were given must match what the run froze; the first
one that differs is named and the resume is refused.
"""

import argparse
import sys
from pathlib import Path

from controller.cli.run_options import add_run_options

DEFAULTS = {
    "agent": "autotune",
    "fence": "landlock",
    "device": "cpu",
    "max_attempts": 12,
    "max_minutes": 120.0,
    "patience": 4,
}


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="tune an operator's Triton kernel against its production kernel, via an agent",
        description=__doc__.splitlines()[0],
    )
    actions = parser.add_subparsers(dest="tune_action", metavar="ACTION", required=True)
    run = actions.add_parser(
        "run",
        help="start or resume a tune run",
        description="Start a tune run (or --resume one). Each attempt that passes every gate "
        "becomes the incumbent; the run stops on attempts, patience, time, money, tokens or "
        "the target speedup and exports the best solution.",
    )
    run.add_argument("--operator", metavar="NAME", help="catalog operator, e.g. rms_norm")
    run.add_argument("--target", type=Path, metavar="REPO", help="target git repository (.)")
    run.add_argument(
        "--task", type=Path, metavar="DIR", help="task package from `controller generate`"
    )
    run.add_argument("--device", choices=("cuda", "cpu"), help="where candidates are evaluated")
    run.add_argument(
        "--patience", type=int, metavar="N", help="stop after N attempts without a promotion"
    )
    run.add_argument(
        "--target-speedup",
        type=float,
        metavar="X",
        help="stop once the incumbent is X times faster than production (weighted)",
    )
    add_run_options(run)
    run.set_defaults(func=run_tune, fence=None, max_attempts=None, max_minutes=None)


def run_tune(arguments: argparse.Namespace, agent=None, evaluator=None) -> int:
    """Start or resume a tune run; `agent` and `evaluator` replace the real ones (tests)."""
    from controller.cli.run_options import start_or_resume
    from controller.errors import ControllerError
    from controller.flows.tune import TuneFlow

    if not arguments.resume:
        for name, value in DEFAULTS.items():
            if getattr(arguments, name, None) is None:
                setattr(arguments, name, value)
        if arguments.patience is not None and arguments.patience < 1:
            raise ControllerError(f"--patience must be at least 1, not {arguments.patience}")
        if arguments.target_speedup is not None and arguments.target_speedup <= 1:
            raise ControllerError(
                f"--target-speedup must be above 1 (a speedup), not {arguments.target_speedup}"
            )
    code = start_or_resume(
        arguments,
        flow_name="tune",
        make_flow=lambda work_item, settings: TuneFlow(work_item, settings, evaluator),
        new_run=lambda: new_tune_run(arguments),
        agent=agent,
        check_resume=lambda store, stored: refuse_changed_options(arguments, store, stored),
    )
    return code


def new_tune_run(arguments: argparse.Namespace):
    """Check the request and freeze the task package's digest before anything is created."""
    from controller.cli.new_run import NewRun
    from controller.errors import ControllerError
    from controller.flows.tune import current_task_digest, given_task_digest

    if not arguments.operator:
        raise ControllerError("--operator NAME is required for a new tune run")
    target = (arguments.target or Path(".")).resolve()
    if not (target / ".git").exists():
        raise ControllerError(f"{target} is not a git repository; pass --target REPO")
    digest = current_task_digest(arguments.operator)
    work_item = {
        "operator": arguments.operator,
        "task_digest": digest,
        "patience": arguments.patience,
        "target_speedup": arguments.target_speedup,
    }
    if arguments.task is not None:
        task = arguments.task.resolve()
        if not (task / "identity.json").is_file():
            raise ControllerError(f"--task {task} is not a task package (no identity.json)")
        digest = given_task_digest(arguments.operator, task)
        if digest is None:
            raise ControllerError(
                f"--task {task} does not match operator {arguments.operator!r} as it is now; "
                "regenerate it with `controller generate --force`"
            )
        work_item.update(task=str(task), task_digest=digest)
    settings = {"device": arguments.device}
    return NewRun(
        target=target,
        work_item=work_item,
        gate_settings=settings,
        policy={"gpu": arguments.device == "cuda"},
    )


RESUME_FIELDS = (
    ("operator", "work_item.operator"),
    ("agent", "agent.spec"),
    ("device", "gate_settings.device"),
    ("patience", "work_item.patience"),
    ("target_speedup", "work_item.target_speedup"),
    ("max_attempts", "limits.max_attempts"),
    ("max_minutes", "limits.max_minutes"),
    ("max_tokens", "limits.max_tokens"),
    ("max_dollars", "limits.max_dollars"),
)


def refuse_changed_options(arguments: argparse.Namespace, store, stored) -> None:
    """A resumed run keeps what it froze: refuse an option or a task that says otherwise
    (`stored`: the run as resuming read it)."""
    from controller.errors import ControllerError
    from controller.flows.tune import (
        TASK,
        current_task_digest,
        given_task_digest,
        task_package_digest,
    )

    manifest = stored.manifest
    frozen = manifest.model_dump(mode="json")
    for option, field in RESUME_FIELDS:
        given = getattr(arguments, option, None)
        if given is None:
            continue
        section, key = field.split(".")
        if frozen[section].get(key) != given:
            raise ControllerError(
                f"cannot resume {store.run_id}: manifest field '{field}' is "
                f"{frozen[section].get(key)!r}, not {given!r}; drop the option or start a new run"
            )
    digest = manifest.work_item.get("task_digest")
    if arguments.task is not None and task_package_digest(arguments.task) != digest:
        raise ControllerError(
            f"cannot resume {store.run_id}: manifest field 'work_item.task_digest' does not "
            f"match --task {arguments.task}; drop the option or start a new run"
        )
    # The run's own copy of its task package, else the one it was given (a captured package
    # is current when it matches the operator; a catalog one when it is the catalog's now).
    task = store.prepared_dir / TASK
    if not task.is_dir() and manifest.work_item.get("task"):
        task = Path(manifest.work_item["task"])
    operator = manifest.work_item.get("operator")
    if manifest.flow != "tune":
        current = digest
    elif task.is_dir():
        current = given_task_digest(operator, task)
    else:
        current = current_task_digest(operator)
    if current != digest:
        raise ControllerError(
            f"cannot resume {store.run_id}: manifest field 'work_item.task_digest' no longer "
            "matches the operator (its declaration or kernel changed); start a new run"
        )
    print(f"controller: resuming tune run {store.run_id}", file=sys.stderr)
