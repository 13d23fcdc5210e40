"""`controller optimize --profile NAME -- DRIVER`: the model-level loop as one resumable batch.

Profile the driver, capture its registry calls, rank the operators by their share of the
model's device time, tune the worthy ones within the budget (largest share first, one tune-all
batch each), install what was promoted, `verify` the model (numerics, and its time against
none, stock and each kernel left out), keep each kernel only where the model needs it, and
install the kept ones into tuned/NAME. Ctrl-C stops it; `--resume RUN` carries on.
"""

import argparse
from pathlib import Path

from controller.cli.run_options import DEFAULT_RUNS_DIR

EXIT_INTERRUPTED = 130
DEFAULT_BUDGET_MINUTES = 20.0
DEFAULT_INPUTS = 2
PLAN_ONLY_PROFILE = "plan"
"""The profile name a `--plan-only` batch records where none was given (it installs nothing)."""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "optimize",
        help="profile, tune, install and verify a driver's operators in one resumable batch",
        description=__doc__.splitlines()[0],
        epilog="example: controller optimize --profile h100 --seed-profile h200 --device cuda "
        "--batch 1 --batch 8 -- controller.profiling.example_driver:forward pi05 1",
    )
    parser.add_argument("--profile", metavar="NAME", help="the kernel profile to install")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        metavar="M",
        help=f"tuning minutes split over the operators (default {DEFAULT_BUDGET_MINUTES:g})",
    )
    parser.add_argument("--operators", nargs="+", metavar="OP", help="tune only these")
    parser.add_argument(
        "--seed-profile",
        metavar="NAME",
        help="start each operator's tune run from the kernel tuned/NAME ships (any GPU or "
        "versions): re-judged by every gate here; with the autotune agent the product's kernel "
        "template challenges it in attempt 2, then the agent searches the one kept (e.g. h200)",
    )
    parser.add_argument(
        "--no-templates",
        action="store_true",
        help="the autotune agent searches each production kernel's own space (none for the "
        "BLAS projections) instead of starting from the kernel template the product ships for "
        "an operator the seed profile lacks, and no template challenges a seed "
        "(kernels/sessions/tune_OP.json)",
    )
    parser.add_argument("--agent", metavar="SPEC", help="agent for every run (default: autotune)")
    parser.add_argument("--base-url", metavar="URL", help="API server for the agent")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="where candidates run")
    parser.add_argument("--target", type=Path, metavar="REPO", help="target git repository (.)")
    parser.add_argument("--gpus", metavar="LIST", help="GPU indices for the tune runs (0)")
    parser.add_argument("--fence", choices=("landlock", "docker"), help="fence of every run")
    parser.add_argument("--unfenced", action="store_true", help="run the agents without a fence")
    parser.add_argument("--max-attempts", type=int, metavar="N", help="attempts per run")
    parser.add_argument("--max-tokens", type=int, metavar="N", help="tokens per run")
    parser.add_argument("--max-dollars", type=float, metavar="USD", help="cost per run")
    parser.add_argument("--patience", type=int, metavar="N", help="attempts without promotion")
    parser.add_argument("--target-speedup", type=float, metavar="X", help="stop at this speedup")
    parser.add_argument("--no-preflight", action="store_true", help="skip baseline preflights")
    parser.add_argument(
        "--plan-only",
        action="store_true",
        help="profile the driver as it deploys, capture its calls and write the plan, then "
        "stop: the report ranks the operators by share of the step against each one's floor "
        "(`-- controller.profiling.example_driver:forward pi05 8` for batch 8's)",
    )
    parser.add_argument(
        "--size", choices=("tiny", "pi05"), help="example model verify checks (pi05 on CUDA)"
    )
    parser.add_argument(
        "--batch", type=int, action="append", metavar="B", help="verify batch size (1)"
    )
    parser.add_argument(
        "--inputs", type=int, metavar="N", help=f"seeds per batch ({DEFAULT_INPUTS})"
    )
    parser.add_argument("--tuned-root", type=Path, metavar="DIR", help="default: tuned/")
    parser.add_argument("--runs-dir", type=Path, default=DEFAULT_RUNS_DIR, metavar="DIR")
    parser.add_argument("--resume", type=Path, metavar="RUN", help="continue an optimize batch")
    parser.add_argument(
        "driver",
        nargs="*",
        metavar="DRIVER",
        help="after `--`: module:function [ARGS] or script.py [ARGS], e.g. "
        "`-- controller.profiling.example_driver:forward pi05 1`",
    )
    parser.set_defaults(func=run)


def run(arguments: argparse.Namespace, steps=None) -> int:
    """Start or resume a batch; `steps` replaces the machine's side effects (tests)."""
    from controller.optimize.batch import run_optimize
    from controller.optimize.report import write_optimize_report
    from controller.optimize.settings import OptimizeSettings
    from controller.runs.progress import Progress

    if arguments.resume:
        store = _resumable(arguments)
        settings = OptimizeSettings.model_validate(store.manifest().work_item)
        print(f"controller: resuming optimize {store.run_id}")
    else:
        store, settings = _start(arguments)
        print(f"controller: optimize {store.run_id} in {store.run_dir}")
    if steps is None:
        steps = _device_steps(settings)
    outcome = run_optimize(store.run_dir, steps, Progress())
    print(f"controller: report in {write_optimize_report(store.run_dir, outcome)}")
    _write_html(store.run_dir)
    if outcome.state == "interrupted":
        print(f"controller: optimize interrupted; resume with --resume {store.run_dir}")
        return EXIT_INTERRUPTED
    if settings.plan_only:
        return 0
    return 0 if outcome.published else 1


def _start(arguments):
    import re

    from controller.batch.devices import parse_gpus
    from controller.cli.tune_all_command import _options
    from controller.errors import ControllerError
    from controller.optimize.batch import FLOW
    from controller.optimize.settings import OptimizeSettings
    from controller.runs.launch import new_manifest
    from controller.runs.manifest import AgentChoice, FenceChoice, RunLimits
    from controller.runs.store import RunStore
    from operators import REGISTRY, triton_runtime
    from operators.profiles import TUNED_ROOT
    from operators.selection import BUILTIN_PROFILES

    name = arguments.profile
    if name is None and arguments.plan_only:
        name = PLAN_ONLY_PROFILE
    if name is None or not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name in BUILTIN_PROFILES:
        raise ControllerError(
            f"--profile {name!r}: give a snake_case name other than "
            f"{', '.join(BUILTIN_PROFILES)} (they are built-in profiles)"
        )
    if not arguments.driver:
        raise ControllerError("no driver given; pass `-- module:function [ARGS]` or `-- script.py`")
    for operator in arguments.operators or []:
        if operator not in REGISTRY:
            raise ControllerError(f"--operators: unknown operator {operator!r}; see `catalog`")
    root = (arguments.tuned_root or TUNED_ROOT).resolve()
    if (root / name).exists() and not arguments.plan_only:
        raise ControllerError(
            f"profile {name!r} is already installed in {root}; choose another name or remove it"
        )
    seed = arguments.seed_profile
    if seed is not None:
        _check_seed(root / seed, seed)
    budget = arguments.budget_minutes
    budget = DEFAULT_BUDGET_MINUTES if budget is None else budget
    batches = arguments.batch or [1]
    inputs = DEFAULT_INPUTS if arguments.inputs is None else arguments.inputs
    if budget <= 0 or inputs < 1 or min(batches) < 1:
        raise ControllerError("--budget-minutes must be positive, --inputs and --batch at least 1")
    arguments.max_minutes = None
    options = _options(arguments)
    cuda = triton_runtime.cuda_available()
    settings = OptimizeSettings(
        profile=name,
        driver=list(arguments.driver),
        budget_minutes=budget,
        operators=list(arguments.operators or []),
        tuned_root=str(root),
        tune=options,
        preflight=not arguments.no_preflight,
        gpus=parse_gpus(arguments.gpus) if arguments.gpus else ["0"],
        size=arguments.size or ("pi05" if cuda else "tiny"),
        batches=batches,
        inputs=inputs,
        seed_profile=seed,
        plan_only=arguments.plan_only,
        templates=not arguments.no_templates,
    )
    manifest = new_manifest(
        flow=FLOW,
        target=Path(options.target),
        base_ref="HEAD",
        work_item=settings.model_dump(mode="json"),
        agent=AgentChoice(spec=options.agent, base_url=options.base_url),
        fence=FenceChoice(name=options.fence, unfenced=options.unfenced),
        limits=RunLimits(max_minutes=budget, max_attempts=options.max_attempts or 3),
        gates=["model numerics", "model latency"],
    )
    return RunStore.create(arguments.runs_dir, manifest), settings


def _resumable(arguments):
    from controller.optimize.batch import FLOW, refuse_changed
    from controller.optimize.settings import OptimizeSettings
    from controller.runs.launch import verify_resumable
    from controller.runs.store import RunStore
    from controller.runs.stored_run import read_stored_run

    store = RunStore.open(arguments.resume, arguments.runs_dir)
    manifest = verify_resumable(read_stored_run(store), flow=FLOW)
    from controller.cli.tune_all_command import PASSED_THROUGH, _given

    given = {
        "profile": arguments.profile,
        "budget_minutes": arguments.budget_minutes,
        "operators": arguments.operators,
        "seed_profile": arguments.seed_profile,
        "driver": arguments.driver or None,
        "plan_only": True if arguments.plan_only else None,
        "templates": False if arguments.no_templates else None,
        "tune.unfenced": True if arguments.unfenced else None,
    }
    for field in PASSED_THROUGH:
        if field != "max_minutes":
            value = _given(arguments, field)
            given[f"tune.{field}"] = value
    refuse_changed(OptimizeSettings.model_validate(manifest.work_item), given)
    return store


def _device_steps(settings):
    from controller.optimize.device_steps import DeviceSteps

    return DeviceSteps(
        settings.tune,
        settings.preflight,
        settings.gpus,
        settings.size,
        settings.batches,
        settings.inputs,
        seed=Path(settings.tuned_root) / settings.seed_profile if settings.seed_profile else None,
        templates=settings.templates,
    )


def _check_seed(folder: Path, name: str) -> None:
    """A seed profile must exist and match its digests; its environment may be any."""
    from controller.errors import ControllerError
    from operators.errors import ProfileError
    from operators.profiles import read_profile, verify_files

    try:
        verify_files(folder, read_profile(folder))
    except ProfileError as error:
        raise ControllerError(f"--seed-profile {name!r}: {error}") from None


def _write_html(folder: Path) -> None:
    """The reviewer's page, where the page writer is installed in this tree."""
    from controller.review_page import write_review_page

    path = write_review_page(folder)
    if path is not None:
        print(f"controller: page in {path}")
