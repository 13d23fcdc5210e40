"""Gate 5, test effectiveness: the candidate's new tests catch a perturbed reference.

Each mutation of the new operator's reference is written into a private copy of the candidate
and the new test files are run there, fenced, with BASE's pytest configuration: they must fail
on every mutant and pass on the candidate itself. A test that passes against a wrong
reference checks nothing.
"""

import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gates.registration.commands import CommandResult, CommandRunner
from gates.registration.judged_commit import make_writable
from gates.registration.mutations import MutationError, mutate, returned_outputs
from gates.registration.probes import ProbeResult
from gates.registration.target_tests import TestFailure, base_config_copy, failure_line
from gates.registration.tree_changes import SKIPPED_NAMES, new_test_files, tree_changes
from gates.verdict import Verdict

GATE = "test_effectiveness"
MUTATIONS = ("scaled", "last_operation_dropped")
PYTEST_CAUGHT = (1, 2)  # tests failed, or collection failed on the mutant


def check(
    base: Path,
    candidate: Path,
    probe: ProbeResult | None,
    runner: CommandRunner,
    workdir: Path,
    timeout: float = 300,
    reference: tuple[str, str] | None = None,
    candidate_run: Callable[[], CommandResult] | None = None,
) -> Verdict:
    """Run the new tests on the candidate and on each mutant of the new reference.

    `reference` is (file, qualname) when known from the source; otherwise the probe says.
    `candidate_run` gives the new tests' run on the candidate when the tests gate shares it.
    """
    started = time.monotonic()
    tests = new_test_files(tree_changes(base, candidate))
    if not tests:
        return Verdict(gate=GATE, passed=False, summary="the candidate added no new test files")
    if reference is None:
        if probe is None or probe.problem:
            summary = probe.problem if probe else "the new operator's reference was not found"
            return Verdict(gate=GATE, passed=False, summary=summary)
        declaration = (probe.declaration or {}).get("operator")
        if not declaration:
            return Verdict(gate=GATE, passed=False, summary="the new operator is not registered")
        reference = (declaration["reference_file"], declaration["reference_qualname"])
    reference_file, qualname = reference
    if not (candidate / reference_file).is_file():
        summary = f"the reference {qualname} must be a function defined in the target's files"
        return Verdict(gate=GATE, passed=False, summary=summary)
    trees = {} if candidate_run else {"candidate": candidate}
    try:
        mutants = _mutants(candidate / reference_file, qualname)
        for name, (mutation, output) in mutants.items():
            trees[name] = _mutant(
                candidate, workdir / f"mutant-{name}", reference_file, qualname, mutation, output
            )
    except MutationError as error:
        return Verdict(gate=GATE, passed=False, summary=f"cannot perturb the reference: {error}")
    workdir.mkdir(parents=True, exist_ok=True)
    config_file = base_config_copy(base, workdir)
    argv = ["python", "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-c", str(config_file)]

    def run(tree: Path) -> CommandResult:
        where = ["--rootdir", str(tree), "--confcutdir", str(tree)]
        folder = (config_file.parent,)  # the fence reads BASE's config copy there
        return runner.run([*argv, *where, *tests], tree, writable=folder, timeout=timeout)

    with ThreadPoolExecutor(max_workers=len(trees) + 1) as pool:
        futures = {name: pool.submit(run, tree) for name, tree in trees.items()}
        if candidate_run:
            futures["candidate"] = pool.submit(_shared_run, candidate_run, timeout)
        results: dict[str, CommandResult] = {name: f.result() for name, f in futures.items()}
    details = {
        "tests": tests,
        "reference": f"{reference_file}:{qualname}",
        "returncodes": {name: r.returncode for name, r in results.items()},
        "outputs": {name: r.output[-3000:] for name, r in results.items()},
    }
    seconds = time.monotonic() - started
    verdict = _judge(results, tests, qualname, mutants)
    passed = verdict is None
    outputs = len(mutants) // len(MUTATIONS)
    summary = verdict or (
        f"{', '.join(tests)} pass on the candidate and fail when {qualname} is scaled by "
        "(1 + 1e-3) and when its last operation is dropped"
        + (f", each of its {outputs} outputs alone" if outputs > 1 else "")
    )
    return Verdict(gate=GATE, passed=passed, summary=summary, details=details, seconds=seconds)


def _shared_run(candidate_run: Callable[[], CommandResult], timeout: float) -> CommandResult:
    try:
        return candidate_run()
    except TestFailure:
        return CommandResult(returncode=124, output="", seconds=timeout, timed_out=True)


def _mutants(reference_file: Path, qualname: str) -> dict[str, tuple[str, int | None]]:
    """Each mutant's name and (mutation, output): one per mutation, or, for a reference that
    returns a tuple literal, one per mutation and output."""
    outputs = returned_outputs(reference_file.read_text(), qualname)
    if outputs is None:
        return {mutation: (mutation, None) for mutation in MUTATIONS}
    return {
        f"{mutation}-{output}": (mutation, output)
        for mutation in MUTATIONS
        for output in range(outputs)
    }


def _judge(
    results: dict[str, CommandResult],
    tests: list[str],
    qualname: str,
    mutants: dict[str, tuple[str, int | None]],
) -> str | None:
    own = results["candidate"]
    if own.returncode != 0:
        return f"the new tests fail on the candidate itself: {failure_line(own)}"
    for name, (mutation, output) in mutants.items():
        result = results[name]
        description = (
            "scaled by (1 + 1e-3)" if mutation == "scaled" else "without its last operation"
        )
        if output is not None:
            description += f" in its output {output} alone"
        if result.returncode == 0:
            return (
                f"the new tests ({', '.join(tests)}) still pass with the reference {qualname} "
                f"{description}; compare against independently computed values, tightly"
            )
        if result.timed_out or result.returncode not in PYTEST_CAUGHT:
            return (
                f"the new tests errored (exit {result.returncode}) with the reference {description}"
            )
    return None


def _mutant(
    candidate: Path,
    folder: Path,
    reference_file: str,
    qualname: str,
    mutation: str,
    output: int | None,
) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(candidate, folder, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED_NAMES))
    make_writable(folder)
    target = folder / reference_file
    target.write_text(mutate(target.read_text(), qualname, mutation, output))
    return folder
