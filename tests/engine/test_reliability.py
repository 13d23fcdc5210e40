"""The reliability suite: a fault injected at every write a run makes and every state
transition it takes, the run resumed after each, reaching the same branch with nothing lost.

Faults go through the run's fault points (`controller/runs/faults.py`). One chain of steps
covers every point: each step resumes the run and fails the next point not yet failed, with
ENOSPC, EIO or EDQUOT at a write, SIGTERM at a transition (in this process: the handler turns
it into an interruption) or SIGKILL at a transition (in a forked child, which dies on the spot).
The points are those a clean reference run passes, in its order.

The exhaustive chains drive the tiny flow (the same engine, store, journal and a real branch;
gates that cost nothing), since a register run's gates take a minute; the register chain fails
one point of each kind around its single pass through the gates. A real full disk (a small
tmpfs, when this process may mount one) ends the same way.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from engine_fixtures import GreetingAgent, TinyFlow, double_fence, make_target, new_tiny_run
from engine_processes import frozen_source, harness

from controller.cli import main
from controller.runs.engine import Engine
from controller.runs.faults import FAULT_VARIABLE, FIRED_MARK, LOG_VARIABLE, rearm
from controller.runs.progress import Progress
from controller.runs.store import RunStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "register"))

from register_session import SITE_ARGUMENTS, expected_tree, git, good_actions  # noqa: E402

ENVIRONMENT = {"python": "3.test", "torch": "test", "triton": "test", "gpu_name": "cpu"}
DISK_FAULTS = ("ENOSPC", "EIO", "EDQUOT")
EXIT_ENVIRONMENT, EXIT_INTERRUPTED = 75, 130


def is_write(label: str) -> bool:
    return label.startswith(("write ", "journal "))


def is_transition(label: str) -> bool:
    return label.startswith("transition ")


def disk_fault(label: str, number: int) -> str:
    return DISK_FAULTS[number % len(DISK_FAULTS)]


class Chain:
    """One run driven through faults, one step (one process's work on it) at a time."""

    def __init__(self, tmp_path: Path, name: str, work, monkeypatch) -> None:
        self.tmp_path, self.name = tmp_path, name
        self.log = tmp_path / f"{name}.points"
        self.work, self.monkeypatch = work, monkeypatch
        self.seen: list[str] = []
        self.failed: list[tuple[str, str, int]] = []  # (fault, label, exit code)
        self.unreached: list[str] = []
        self.finished: list[Path] = []  # runs that reached their end before every point failed
        self.runs = tmp_path / f"{name}-1"

    @property
    def run_dir(self) -> Path | None:
        found = sorted(self.runs.glob("*-*")) if self.runs.is_dir() else []
        return found[0] if found else None

    def new_run(self) -> None:
        """Keep the finished run for checking and go on with a fresh one."""
        self.finished.append(self.run_dir)
        self.runs = self.tmp_path / f"{self.name}-{len(self.finished) + 1}"

    def step(self, plan: str, forked: bool = False) -> int:
        """One process's work on the run with `plan` armed; records the points it passed."""
        self.monkeypatch.setenv(FAULT_VARIABLE, plan)
        self.monkeypatch.setenv(LOG_VARIABLE, str(self.log))
        rearm()
        self.log.write_text("")
        code = _forked(self.work, self) if forked else self.work(self)
        for label in self.log.read_text().splitlines():
            if not label.startswith(FIRED_MARK) and label not in self.seen:
                self.seen.append(label)
        return code

    def fail_every_point(self, order: list[str], fault_for, wanted, forked=False) -> None:
        """Fail each point `wanted` selects once, in `order` (then as newly discovered)."""
        self.seen = list(order)
        done: set[str] = set()
        while True:
            pending = [label for label in self.seen if wanted(label) and label not in done]
            if not pending:
                return
            label = pending[0]
            done.add(label)
            fault = fault_for(label, len(done))
            code = self.step(f"{fault}@{label}", forked)
            if _last_fault_missed(self, label):  # the run ended first: try a fresh run once
                self.new_run()
                code = self.step(f"{fault}@{label}", forked)
            if _last_fault_missed(self, label):
                self.unreached.append(label)
            else:
                self.failed.append((fault, label, code))

    def finish(self) -> list[Path]:
        """Resume the last run to its end; every run the chain made."""
        assert self.step("") == 0
        return [*self.finished, self.run_dir]


def _last_fault_missed(chain: Chain, label: str) -> bool:
    return FIRED_MARK + label not in chain.log.read_text().splitlines()


def _forked(work, chain: Chain) -> int:
    child = os.fork()
    if child == 0:  # the child does the step and never returns into pytest
        code = 1
        try:
            code = work(chain)
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def tiny_work(target: Path):
    """A step of a tiny run: create it the first time, then resume it, as the CLI would."""

    def work(chain: Chain) -> int:
        from controller.errors import environment_failure

        try:
            store = RunStore.open(chain.run_dir) if chain.run_dir else None
            store = store or new_tiny_run(chain.runs, target, ENVIRONMENT, max_attempts=12)
            agent = GreetingAgent(good_from=2)
            engine = Engine(store, TinyFlow(), agent, double_fence(store.run_dir), Progress(False))
            return engine.run().exit_code
        except OSError as error:
            assert environment_failure(error), error
            return EXIT_ENVIRONMENT

    return work


def reference_points(tmp_path: Path, work, monkeypatch) -> tuple[list[str], Path]:
    """The points a clean run passes, in order, and its run folder."""
    reference = Chain(tmp_path, "reference", work, monkeypatch)
    assert reference.step("") == 0
    return reference.seen, reference.run_dir


def events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]


def assert_nothing_lost(run: Path, tree: str, target: Path) -> dict:
    """Done, on the clean run's tree, with every attempt closed and its records whole."""
    report = json.loads((run / "evidence" / "report.json").read_text())
    assert report["state"] == "done"
    branch = report["published"]["branch"]
    assert git(target, "rev-parse", f"{branch}^{{tree}}") == tree
    journal = events(run)
    assert [event["seq"] for event in journal] == list(range(1, len(journal) + 1))
    started = [e["attempt"] for e in journal if e["kind"] == "agent_started"]
    ended = [
        e["attempt"] for e in journal if e["kind"] in ("agent_finished", "attempt_interrupted")
    ]
    assert sorted(started) == sorted(ended) == list(range(1, len(started) + 1))
    assert report["totals"]["attempts"] == len(started) == len(report["attempts"])
    for attempt in report["attempts"]:
        if attempt["status"] == "interrupted":
            continue
        folder = run / "attempts" / f"{attempt['number']:04d}"
        for name in ("prompt.md", "transcript.json", "agent.json", "check.json"):
            assert (folder / name).is_file(), (attempt["number"], name)
        assert len(attempt["verdicts"]) == len(report["asked"]["gates"])
    assert report["attempts"][-1]["status"] == "accepted"
    assert not list(run.rglob(".*.tmp")), "a failed write left its temp file"
    return report


def published_tree(run: Path, target: Path) -> str:
    branch = json.loads((run / "publish.json").read_text())["branch"]
    return git(target, "rev-parse", f"{branch}^{{tree}}")


def test_a_disk_fault_at_every_write_and_sigterm_at_every_transition(tmp_path, monkeypatch):
    target = make_target(tmp_path / "target")
    work = tiny_work(target)
    order, reference = reference_points(tmp_path, work, monkeypatch)
    assert sum(map(is_write, order)) >= 30 and sum(map(is_transition, order)) >= 7, order
    chain = Chain(tmp_path, "chain", work, monkeypatch)
    chain.fail_every_point(
        order,
        lambda label, n: "SIGTERM" if is_transition(label) else disk_fault(label, n),
        lambda label: label in order and (is_write(label) or is_transition(label)),
    )
    assert not chain.unreached, chain.unreached
    tree = published_tree(reference, target)
    reports = [assert_nothing_lost(run, tree, target) for run in chain.finish()]
    expected = {fault: EXIT_ENVIRONMENT for fault in DISK_FAULTS} | {"SIGTERM": EXIT_INTERRUPTED}
    after_done = set(order[order.index("journal transition -> done") + 1 :])
    for fault, label, code in chain.failed:  # a fault once the run is done leaves it done
        allowed = {0, expected[fault]} if label in after_done else {expected[fault]}
        assert code in allowed, (fault, label, code)
    stops = "\n".join(stop for report in reports for stop in report["stops"])
    for words in ("no space left on the device writing", "an I/O error on the device writing"):
        assert words in stops
    assert "stopped by SIGTERM" in stops
    failed = {label for _, label, _ in chain.failed}
    assert failed == {label for label in order if is_write(label) or is_transition(label)}


def test_sigkill_at_every_transition(tmp_path, monkeypatch):
    target = make_target(tmp_path / "target")
    work = tiny_work(target)
    order, reference = reference_points(tmp_path, work, monkeypatch)
    chain = Chain(tmp_path, "chain", work, monkeypatch)
    chain.fail_every_point(
        order,
        lambda label, n: "SIGKILL",
        lambda label: label in order and is_transition(label),
        forked=True,
    )
    assert not chain.unreached, chain.unreached
    assert {code for _, _, code in chain.failed} == {-9}
    tree = published_tree(reference, target)
    reports = [assert_nothing_lost(run, tree, target) for run in chain.finish()]
    stops = [stop for report in reports for stop in report["stops"]]
    crashes = [stop for stop in stops if stop.startswith("resumed after a crash")]
    # A kill once `done` is journaled leaves a finished run: nothing to recover from.
    assert len(crashes) == sum(label != "transition -> done" for _, label, _ in chain.failed)
    assert any("in state checking; redoing the gates of attempt" in stop for stop in crashes)


@pytest.fixture
def frozen_identity(monkeypatch):
    """Fixed identities: edits others make to this tree mid-test must not block the resumes."""
    monkeypatch.setattr("controller.runs.launch.controller_source_digest", lambda: "sha256:test")
    monkeypatch.setattr("controller.runs.launch.current_environment", lambda: dict(ENVIRONMENT))


def register_work(target: Path, session: Path, fence: list[str]):
    """A step of a register run through the CLI: start it the first time, then resume it."""

    def work(chain: Chain) -> int:
        if chain.run_dir is not None:
            return main(["register", "run", "--resume", str(chain.run_dir)])
        argv = ["register", "run", "--target", str(target), "--operator", "gelu_tanh"]
        argv += [*SITE_ARGUMENTS, "--agent", f"scripted:{session}", *fence]
        return main([*argv, "--max-attempts", "4", "--runs-dir", str(chain.runs)])

    return work


@pytest.mark.slow
def test_a_register_run_survives_each_kind_of_fault_around_one_pass_of_its_gates(
    tmp_path, monkeypatch, frozen_identity
):
    from register_session import write_target

    from sandbox.errors import FenceError
    from sandbox.fence import get_fence

    try:
        get_fence("landlock")
        fence = ["--fence", "landlock"]
    except FenceError:
        fence = ["--unfenced"]
    target = write_target(tmp_path / "target")
    session = tmp_path / "session.json"
    session.write_text(json.dumps({"attempts": [good_actions()] * 4}))
    chain = Chain(tmp_path, "register", register_work(target, session, fence), monkeypatch)
    plans = [  # (fault, point, exit code, forked)
        ("ENOSPC", "write attempt/prompt.md", EXIT_ENVIRONMENT, False),
        ("EIO", "write attempt/transcript.json", EXIT_ENVIRONMENT, False),  # session lost
        ("SIGTERM", "transition -> checking", EXIT_INTERRUPTED, False),
        ("EDQUOT", "write attempt/verdicts/scope.json", EXIT_ENVIRONMENT, False),
        ("SIGKILL", "transition -> accepted", -9, True),
        ("ENOSPC", "write publish (the flow's output)", EXIT_ENVIRONMENT, False),
        ("SIGKILL", "journal published", -9, True),
    ]
    for fault, point, code, forked in plans:
        assert chain.step(f"{fault}@{point}", forked) == code, (fault, point)
        assert not _last_fault_missed(chain, point), point
    (run,) = chain.finish()
    report = assert_nothing_lost(run, expected_tree(target, tmp_path), target)
    assert [a["status"] for a in report["attempts"]] == ["interrupted", "accepted"]
    checks = list((run / "attempts" / "0002" / "gates").iterdir())
    assert len(checks) == 1, "the gates ran again although their verdicts were on disk"
    stops = "\n".join(report["stops"])
    assert "resumed after a crash in state accepted; redoing publishing attempt 2" in stops
    assert "no space left on the device writing" in stops and "stopped by SIGTERM" in stops
    message = git(target, "log", "-1", "--format=%B", report["published"]["branch"])
    assert f"Evidence: {run / 'evidence' / 'report.md'}" in message
    assert "attempt 1: interrupted (an I/O error on the device writing" in message
    assert "Still to judge by eye:" in message and "fidelity to the model's maths" in message


def test_a_real_full_disk_interrupts_the_run_and_it_resumes_once_space_is_freed(tmp_path):
    """A small tmpfs (this process must be allowed to mount one) filled almost to the brim."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if mounted.returncode != 0 or shutil.which("umount") is None:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        target = make_target(tmp_path / "target")
        source = frozen_source(tmp_path / "source")
        filler = mount / "filler"
        filler.write_bytes(b"\0" * (4096 - 64) * 1024)  # leaves room to start, not finish
        runs = mount / "runs"
        stopped = harness("start", runs, target, python_path=source)
        assert stopped.returncode == EXIT_ENVIRONMENT, stopped.stderr
        (run,) = [path for path in runs.iterdir() if not path.name.startswith(".")]
        # The disk may be too full even to journal `interrupted`: then the resume is a crash's.
        state = json.loads((run / "state.json").read_text())["state"]
        assert state not in ("failed", "done"), state
        filler.unlink()
        resumed = harness("resume", run, python_path=source)
        assert resumed.returncode == 0, resumed.stderr
        report = json.loads((run / "evidence" / "report.json").read_text())
        assert report["state"] == "done" and report["attempts"][-1]["status"] == "accepted"
        stops = "\n".join(report["stops"])
        assert "no space left on the device" in stops or "resumed after a crash" in stops
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
