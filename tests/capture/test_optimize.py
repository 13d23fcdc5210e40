"""`controller optimize`: ranking, the budget split, install, verify and the keep-or-drop rule,
end to end on the tiny example's capture with the machine faked at its boundary
(`optimize_fakes`), and a batch SIGKILLed at every transition that resumes to the same profile."""

import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest
from optimize_fakes import FakeSteps, hotspot_report
from optimize_runs import (
    US_PER_STEP,
    forked,
    journal_events,
    light_fake_steps,
    only_batch,
    optimize_argv,
)

from controller.batch.record import RunOptions
from controller.cli import build_parser, main
from controller.cli.optimize_command import run as run_optimize
from controller.optimize.device_steps import DeviceSteps
from controller.optimize.plan import plan_tuning
from operators.selection import KernelSelection

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "batch"))
from batch_fixtures import make_target, write_script  # noqa: E402

PROMOTED_MS = {"gated_residual_norm": 5.0, "rms_norm": -2.0, "rotate_qk": 3.0}
BAD_NUMERICS = ("rotate_qk",)


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Path:
    return make_target(tmp_path_factory.mktemp("target") / "repo")


def fake_steps(tiny_capture: Path) -> FakeSteps:
    return FakeSteps(tiny_capture, US_PER_STEP, PROMOTED_MS, BAD_NUMERICS)


def test_the_budget_goes_to_the_largest_shares_and_leaves_out_what_it_cannot_afford():
    report = hotspot_report(US_PER_STEP)
    captured = set(US_PER_STEP) - {"ada_rms_norm"}
    plan = plan_tuning(report, captured, set(US_PER_STEP), budget_minutes=2.5)
    reasons = {row.operator: row.reason for row in plan.rows}
    assert [row.operator for row in plan.rows] == list(US_PER_STEP)  # largest share first
    assert [(row.operator, row.minutes) for row in plan.tuned] == [
        ("gated_residual_norm", pytest.approx(1 + 0.5 * 4 / 7, abs=1e-3)),
        ("rms_norm", pytest.approx(1 + 0.5 * 3 / 7, abs=1e-3)),
    ]
    assert reasons["rotate_qk"] == "the budget gives 1 minute to 2 only"
    assert reasons["ada_rms_norm"] == "the capture holds no call of it"
    assert reasons["split_kv_attention"] == "under 1% of the step"
    asked = plan_tuning(
        report, captured, set(US_PER_STEP), 9.0, ["split_kv_attention", "rms_norm", "linear"]
    )
    assert [row.operator for row in asked.tuned] == ["rms_norm", "split_kv_attention"]
    assert sum(row.minutes for row in asked.tuned) == pytest.approx(9.0)
    assert {row.operator: row.reason for row in asked.rows}["linear"] == (
        "the profile saw no call of it"
    )


def test_optimize_keeps_only_the_kernels_the_model_needs_and_reports_the_figures(
    tiny_capture, target, tmp_path, capsys
):
    steps = fake_steps(tiny_capture)
    code = run_optimize(build_parser().parse_args(optimize_argv(tmp_path, target)), steps=steps)
    assert code == 0, capsys.readouterr().out
    assert [name for name, _ in steps.tuned] == list(US_PER_STEP)[:4]  # largest share first
    assert steps.calibrated == list(US_PER_STEP)[:4]
    minutes = dict(steps.tuned)
    assert minutes["gated_residual_norm"] == pytest.approx(1 + 1 * 400 / 1050, abs=1e-3)
    assert minutes["ada_rms_norm"] == pytest.approx(1 + 1 * 150 / 1050, abs=1e-3)

    profile = json.loads((tmp_path / "tuned" / "fast" / "profile.json").read_text())
    assert sorted(profile["operators"]) == ["gated_residual_norm"]
    batch = only_batch(tmp_path / "runs")
    published = KernelSelection("fast", tuned_root=tmp_path / "tuned")  # verified, so it loads
    assert published.resolve("gated_residual_norm").tuned is not None
    verified = json.loads((tmp_path / "tuned" / "fast" / "verified.json").read_text())
    assert verified["verified_by"] == f"controller optimize {batch.name} (verify kept)"
    staged = json.loads((batch / "profiles" / "all" / "fast" / "profile.json").read_text())
    assert sorted(staged["operators"]) == ["gated_residual_norm", "rms_norm", "rotate_qk"]
    report = json.loads((batch / "evidence" / "report.json").read_text())
    decisions = {row["operator"]: row for row in report["decisions"]}
    assert decisions["gated_residual_norm"]["kept"]
    # rms_norm passed its own gates (it was promoted) but the model is slower with it
    assert not decisions["rms_norm"]["kept"]
    removal = decisions["rms_norm"]["removal"][0]  # the model: 94 ms with it, 92 ms without
    assert removal["median"] == pytest.approx(92 / 94, abs=1e-4)
    assert decisions["rotate_qk"]["reason"] == "dropped: the model's numerics fail with it"
    assert report["verify"]["alone_numerics"] == {
        "gated_residual_norm": True,
        "rms_norm": True,
        "rotate_qk": False,
    }
    assert report["kept"]["speed_failures"] == []
    markdown = (batch / "evidence" / "report.md").read_text()
    assert (
        "| rms_norm | no | dropped: removing it makes the model faster "
        "(profile x0.979 against without rms_norm (rounds 0.979-0.979)) |"
    ) in markdown
    assert (
        "| split_kv_attention | 5.0 | 0.5% | 2.0 | - | - | - | under 1% of the step |" in markdown
    )
    assert (
        "| operator | started from | shipped | status | speedup | minutes (plan) | export "
        "| reason |" in markdown
    )
    assert re.search(
        r"\| gated_residual_norm \| template \| [^|]+ \| done \| x1\.200 \| 0\.\d\d \(1\.38\) \|",
        markdown,
    )
    assert json.loads((batch / "verify.json").read_text())["passed"]
    applies = markdown[markdown.index("## Where each kernel applies") :]
    assert "| kernel | owns | declines (production runs) |" in applies
    assert "| gated_residual_norm | " in applies
    page = (batch / "evidence" / "report.html").read_text()
    assert "<table>" in page and "<td>gated_residual_norm</td>" in page  # tables, not text
    assert "data-chart='plan-shares'" in page and "data-chart='model-time'" in page
    assert "class='report'><pre" not in page and "| --- |" not in page
    assert "<h2>Where each kernel applies</h2>" in page and "<td>gated_residual_norm</td>" in page
    printed = capsys.readouterr().out
    assert "optimize: tune rms_norm: done x1.200" in printed
    assert "; started from production" in printed
    kept = "optimize: decide: gated_residual_norm kept: removing it makes the model slower"
    assert kept in printed


def test_a_kernel_is_not_kept_where_the_model_was_not_timed_and_a_resume_keeps_the_request(
    tiny_capture, target, tmp_path, capsys
):
    steps = fake_steps(tiny_capture)
    steps.time = lambda profiles, pairs, log=None: []  # a CPU: verify does not time the model
    argv = optimize_argv(tmp_path, target, "--operators", "gated_residual_norm")
    assert run_optimize(build_parser().parse_args(argv), steps=steps) == 1
    report = json.loads((only_batch(tmp_path / "runs") / "evidence" / "report.json").read_text())
    (decision,) = report["decisions"]
    assert decision["reason"] == "dropped: the model was not timed (timing needs CUDA)"
    assert not (tmp_path / "tuned" / "fast").exists()

    batch = str(only_batch(tmp_path / "runs"))
    assert main(["optimize", "--resume", batch, "--budget-minutes", "9"]) == 2
    assert main(["optimize", "--resume", batch, "--agent", "claude"]) == 2
    assert main(["optimize", "--resume", batch, "--no-templates"]) == 2
    errors = capsys.readouterr().err
    assert "optimize field 'budget_minutes' is 5.0, not 9.0" in errors
    assert "optimize field 'tune.agent' is 'autotune', not 'claude'" in errors
    assert "optimize field 'templates' is True, not False" in errors
    again = fake_steps(tiny_capture)
    assert run_optimize(build_parser().parse_args(["optimize", "--resume", batch]), again) == 1
    assert again.tuned == []  # a finished step is read back from the journal, not redone


def test_bad_requests_are_one_line_and_exit_2(tiny_capture, target, tmp_path, capsys):
    argv = optimize_argv(tmp_path, target)
    assert main([*argv[:2], "none", *argv[3:]]) == 2
    assert "--profile 'none': give a snake_case name" in capsys.readouterr().err
    assert main([*argv[:-4], "--operators", "no_such_op", *argv[-4:]]) == 2
    assert "--operators: unknown operator 'no_such_op'" in capsys.readouterr().err
    assert main([*argv[:-4], "--budget-minutes", "0", *argv[-4:]]) == 2
    assert "--budget-minutes must be positive" in capsys.readouterr().err
    assert main(argv[: argv.index("--")]) == 2
    assert "no driver given" in capsys.readouterr().err
    (tmp_path / "tuned" / "fast").mkdir(parents=True)
    assert main(argv) == 2
    assert "profile 'fast' is already installed" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_sigkill_at_every_transition_then_resume_reaches_the_same_profile(
    tiny_capture, target, tmp_path
):
    reference = tmp_path / "reference"
    argv = optimize_argv(reference, target)
    assert run_optimize(build_parser().parse_args(argv), steps=light_fake_steps(tiny_capture)) == 0
    expected = (reference / "tuned" / "fast" / "profile.json").read_text()

    killed = tmp_path / "killed"
    killed_after: set[tuple[str, str]] = set()
    kill_at, resume = 1, None  # the first process dies right after `created`
    while True:
        given = ["optimize", "--resume", resume] if resume else optimize_argv(killed, target)
        status = forked(given, light_fake_steps(tiny_capture), kill_at)
        if not os.WIFSIGNALED(status):
            assert os.WEXITSTATUS(status) == 0
            break
        assert os.WTERMSIG(status) == signal.SIGKILL
        resume = str(only_batch(killed / "runs"))
        last = journal_events(Path(resume))[-1]
        killed_after.add((last["kind"], last.get("step", "")))
        assert len(killed_after) < 100, "the batch makes no progress between kills"
        # A resumed process appends `resumed` first: dying after its 2nd event kills it as a
        # step starts, after its 3rd as that step finishes, so every transition gets a kill.
        kill_at = 3 if kill_at == 2 else 2
    assert (killed / "tuned" / "fast" / "profile.json").read_text() == expected
    events = journal_events(Path(resume))
    transitions = {(e["kind"], e.get("step", "")) for e in events if e["kind"] != "resumed"}
    assert transitions - {("finished", "")} <= killed_after
    finished_steps = [event["step"] for event in events if event["kind"] == "step_finished"]
    assert len(finished_steps) == len(set(finished_steps)) > 10  # none was done twice


def test_the_tune_step_is_one_captured_tune_all_batch_and_a_second_call_resumes_it(
    tiny_capture, target, tmp_path, monkeypatch
):
    """The real step: a `tune run` child on the CPU with a scripted agent (nothing is timed,
    so nothing is promoted)."""
    monkeypatch.setenv("CONTROLLER_DEVICE_LOCKS", str(tmp_path / "locks"))
    script = write_script(tmp_path / "session.json", [])
    options = RunOptions(
        agent=f"scripted:{script}", device="cpu", target=str(target), unfenced=True, max_attempts=1
    )
    steps = DeviceSteps(options, False, ["0"], "tiny", [1], 1, say=lambda line: None)
    folder = tmp_path / "tune" / "rms_norm"
    first = steps.tune("rms_norm", 1.5, tiny_capture, folder)
    assert (first.status, first.export) == ("rejected", None)
    assert first.reason == "attempt limit reached: 1 of 1 used"
    (batch,) = folder.glob("batch-*")
    record = json.loads((batch / "batch.json").read_text())
    assert record["options"]["max_minutes"] == 1.5  # the plan's minutes for this operator
    assert record["capture"] == str(tiny_capture.resolve())
    assert steps.tune("rms_norm", 1.5, tiny_capture, folder) == first
    assert list(folder.glob("batch-*")) == [batch]  # resumed, not started again


def test_a_tuning_that_cannot_start_fails_its_operator_only(target, tmp_path):
    options = RunOptions(agent="autotune", device="cpu", target=str(target), unfenced=True)
    steps = DeviceSteps(options, False, ["0"], "tiny", [1], 1, say=lambda line: None)
    outcome = steps.tune("rms_norm", 1.0, tmp_path / "no-capture", tmp_path / "tune")
    assert outcome.status == "failed" and outcome.export is None
    assert "holds no capture.json; run `controller capture-ops`" in outcome.reason


def test_a_tune_step_past_its_planned_minutes_is_marked_over():
    from controller.optimize.report import _minutes

    assert _minutes(1.2, 1.0) == "1.20 (1.00) over"
    assert _minutes(1.09, 1.0) == "1.09 (1.00)"
    assert _minutes(None, 1.0) == "-" and _minutes(0.5, None) == "0.50"


def test_plan_only_profiles_captures_and_plans_then_stops(tiny_capture, target, tmp_path):
    """`--plan-only` needs no profile name: the report ranks the operators against their
    floors, and nothing is calibrated, tuned or installed."""
    steps = fake_steps(tiny_capture)
    argv = optimize_argv(tmp_path, target, "--plan-only")
    del argv[argv.index("--profile") : argv.index("--profile") + 2]
    assert run_optimize(build_parser().parse_args(argv), steps=steps) == 0
    assert steps.tuned == [] and steps.calibrated == []
    batch = only_batch(tmp_path / "runs")
    markdown = (batch / "evidence" / "report.md").read_text()
    assert "**Result:** the plan only (`--plan-only`): nothing was tuned or installed." in markdown
    assert "| gated_residual_norm | 400.0 |" in markdown
    assert not (tmp_path / "tuned").exists()
    assert main(["optimize", "--resume", str(batch), "--plan-only"]) == 0  # same request


def test_with_one_kernel_dropped_the_kept_set_takes_its_time_from_the_whole_sets_session(
    tiny_capture, target, tmp_path
):
    """The kept set is the set without the dropped kernel, timed beside `none` and `stock` in
    verify's paired session: its numerics are checked again, its time is not measured twice.
    Staged files that differ from what was timed are timed afresh."""
    from controller.optimize.model_checks import ModelCheck, _timed_beside_the_whole

    steps = light_fake_steps(tiny_capture)
    sessions = []
    timed = steps.time
    steps.time = lambda profiles, pairs, log=None: (
        sessions.append(sorted(profiles)) or timed(profiles, pairs, log)
    )
    assert run_optimize(build_parser().parse_args(optimize_argv(tmp_path, target)), steps) == 0
    assert len(sessions) == 1 and "without rms_norm" in sessions[0]
    batch = only_batch(tmp_path / "runs")
    kept = json.loads((batch / "verify" / "kept.json").read_text())
    whole = json.loads((batch / "verify" / "all.json").read_text())
    (kept_timing,), (whole_timing,) = kept["timing"], whole["timing"]
    assert kept_timing["round_ms"]["profile"] == whole_timing["round_ms"]["without rms_norm"]
    assert sorted(kept_timing["round_ms"]) == ["none", "profile", "stock"]
    assert [(r["candidate"], r["baseline"]) for r in kept_timing["ratios"]] == [
        ("profile", "none"),
        ("profile", "stock"),
    ]
    assert (
        "timed in the whole set's paired session as 'without rms_norm'"
        in (kept["numerics"]["notes"])
    )
    markdown = (batch / "evidence" / "report.md").read_text()
    assert "- timed in the whole set's paired session as 'without rms_norm'" in markdown
    exports = {"gated_residual_norm": Path("unused"), "rms_norm": Path("unused")}
    check = ModelCheck.model_validate(whole)
    assert _timed_beside_the_whole(batch, "fast", ["gated_residual_norm"], exports, check)
    staged = batch / "profiles" / "without-rms_norm" / "fast" / "profile.json"
    document = json.loads(staged.read_text())
    document["files"] = {**document["files"], "extra.py": "0" * 64}  # not what was timed
    staged.write_text(json.dumps(document))
    assert _timed_beside_the_whole(batch, "fast", ["gated_residual_norm"], exports, check) == []
    original = json.loads((batch / "profiles" / "kept" / "fast" / "profile.json").read_text())
    staged.write_text(json.dumps({**document, "files": original["files"]}))  # digests alike
    assert _timed_beside_the_whole(batch, "fast", ["gated_residual_norm"], exports, check)
    timed = batch / "profiles" / "without-rms_norm" / "fast"  # but a timed file's bytes not
    source = next(path for path in timed.rglob("*.py"))
    source.write_text(source.read_text() + "\n# edited after it was timed\n")
    assert _timed_beside_the_whole(batch, "fast", ["gated_residual_norm"], exports, check) == []
