"""From a tune run to a loaded profile: a run whose candidate is promoted (timing faked only
at the evaluator boundary, as in the tune-flow tests) exports it; the batch summary reads its
figures; `controller install` takes the export; the profile loads and applies only on CUDA
layouts (the evaluation's device), so on this CPU every call falls back to production."""

import sys
from pathlib import Path

import torch

from controller.batch.record import OperatorEntry
from controller.batch.summary import summarize_operator
from controller.cli import main
from controller.cli.tune_command import run_tune
from operators.catalog.rms_norm import rms_norm_triton
from operators.selection import KernelSelection

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tune"))
from tune_fixtures import (  # noqa: E402  (tests/tune is not a package)
    FakeEvaluator,
    make_target,
    mark,
    only_run,
    tune_arguments,
    write_script,
)


def test_a_promoted_run_exports_what_install_and_the_batch_summary_read(tmp_path):
    script = write_script(tmp_path / "session.json", [mark("factor=0.80")])
    runs = tmp_path / "batch" / "runs" / "rms_norm"  # where tune-all keeps an operator's run
    arguments = tune_arguments(
        runs,
        make_target(tmp_path / "target"),
        operator="rms_norm",
        agent=f"scripted:{script}",
        unfenced=True,
        device="cuda",
        max_attempts=1,
    )
    assert run_tune(arguments, evaluator=FakeEvaluator()) == 0
    export = only_run(runs) / "export"

    row = summarize_operator(tmp_path / "batch", "rms_norm", OperatorEntry(status="done"))
    assert row.export == str(export)
    assert 1.2 < row.speedup < 1.3 and 1.1 < row.weakest_round_speedup <= row.speedup * 1.02

    tuned = tmp_path / "tuned"
    assert main(["install", str(export), "--profile", "ours", "--tuned-root", str(tuned)]) == 0
    resolved = KernelSelection("ours", tuned_root=tuned, allow_unverified=True).resolve("rms_norm")
    assert resolved.tuned is not None
    x = torch.randn(50, 1024).to(torch.bfloat16)
    weight = torch.randn(1024).to(torch.bfloat16)
    assert not resolved.tuned.applies(x, weight, eps=1e-6)  # verified on cuda, this is cpu
    assert torch.equal(resolved(x, weight, eps=1e-6), rms_norm_triton(x, weight, eps=1e-6))
