"""`controller install`: an export becomes a digest-pinned profile operator that runs only on
the layouts the evaluator verified, and refuses what it cannot vouch for."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from export_fixtures import make_export

from controller.cli import main
from controller.flows.tune_export import CHECKSUMS, checksums
from operators.catalog.rms_norm import rms_norm_triton
from operators.errors import ProfileError
from operators.selection import KernelSelection

ROOT = Path(__file__).resolve().parents[2]


def install(export: Path, root: Path, *extra: str) -> int:
    return main(["install", str(export), "--profile", "fast", "--tuned-root", str(root), *extra])


def rows(count: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(count)
    x = torch.randn(count, 1024, generator=generator).to(torch.bfloat16)
    return x, torch.randn(1024, generator=generator).to(torch.bfloat16)


def test_an_installed_export_runs_on_verified_layouts_and_falls_back_elsewhere(export, tmp_path):
    assert install(export, tmp_path) == 0
    resolved = KernelSelection("fast", tuned_root=tmp_path, allow_unverified=True).resolve(
        "rms_norm"
    )
    assert resolved.tuned is not None
    assert resolved.tuned.kernel.__module__.startswith("_tuned_fast_rms_norm.")
    x, weight = rows(50)  # the action_b1 workload: 50 rows of 1024
    assert resolved.tuned.applies(x, weight, 1e-6) and resolved.tuned.applies(x, weight, eps=1e-6)
    assert torch.equal(resolved(x, weight, eps=1e-6), rms_norm_triton(x, weight, eps=1e-6))
    odd, odd_weight = rows(3)
    assert not resolved.tuned.applies(odd, odd_weight, eps=1e-6)  # no workload has 3 rows
    assert not resolved.tuned.applies(x.float(), weight.float(), eps=1e-6)
    assert not resolved.tuned.applies(x, weight, eps=1e-5)
    transposed = torch.empty(1024, 50, dtype=torch.bfloat16).t()
    assert not resolved.tuned.applies(transposed, weight, eps=1e-6)

    profile = json.loads((tmp_path / "fast" / "profile.json").read_text())
    assert profile["environment"]["gpu_name"] == "cpu"
    entry = profile["operators"]["rms_norm"]
    assert entry["run_id"] == "tune-20261201T000000Z-abcdef" and entry["attempt"] == 3
    assert entry["task_digest"] == json.loads((export / "export.json").read_text())["task_digest"]
    assert entry["entry_point"] == "operators/catalog/rms_norm.py::rms_norm_triton"
    assert len(entry["layouts"]) == 4 * 2  # 4 workloads x (with eps, without: the default)
    assert "rms_norm/kernel.py" in profile["files"]
    assert "rms_norm/solution/operators/catalog/rms_norm.py" in profile["files"]


def test_an_installed_profile_does_not_load_until_verified_and_install_says_so(
    export, tmp_path, capsys
):
    assert install(export, tmp_path) == 0
    assert f"`controller verify --profile fast --tuned-root {tmp_path}` passes it" in (
        capsys.readouterr().out
    )
    with pytest.raises(ProfileError, match="profile 'fast' is not verified"):
        KernelSelection("fast", tuned_root=tmp_path).resolve("rms_norm")


def test_reinstalling_needs_replace(export, tmp_path, capsys):
    assert install(export, tmp_path) == 0
    assert install(export, tmp_path) == 2
    assert "profile 'fast' already has 'rms_norm'; pass --replace" in capsys.readouterr().err
    assert install(export, tmp_path, "--replace") == 0
    assert not list(tmp_path.glob(".fast*"))  # staging and the retired copy are gone


def test_an_export_from_another_environment_is_refused_naming_the_difference(tmp_path, capsys):
    foreign = make_export(tmp_path / "h200", gpu_name="NVIDIA H200", compute_capability="9.0")
    assert install(foreign, tmp_path / "tuned") == 2
    message = capsys.readouterr().err
    assert "verified in another environment (gpu_name: 'NVIDIA H200' != 'cpu'" in message
    assert not (tmp_path / "tuned" / "fast").exists()


def test_a_tampered_export_is_refused_naming_the_file(tmp_path, capsys):
    export = make_export(tmp_path / "tampered")
    kernel = export / "solution" / "operators" / "catalog" / "rms_norm.py"
    kernel.write_text(kernel.read_text().replace('"num_warps": 4', '"num_warps": 8'))
    assert install(export, tmp_path / "tuned") == 2
    assert "solution/operators/catalog/rms_norm.py does not match its checksum" in (
        capsys.readouterr().err
    )


def test_an_export_that_asks_where_it_runs_is_refused_before_anything_is_installed(
    tmp_path, capsys
):
    """An export assembled after its evaluation (checksums rewritten to match) whose kernel
    computes honestly only while the device holds little memory (a judge's process)."""
    export = make_export(tmp_path / "sniffing")
    kernel = export / "solution" / "operators" / "catalog" / "rms_norm.py"
    text = kernel.read_text() + "\n\nJUDGED = torch.cuda.memory_allocated() < 1 << 30\n"
    kernel.write_text(text)
    line = len(text.splitlines())
    (export / CHECKSUMS).write_text(json.dumps(checksums(export)))
    assert install(export, tmp_path / "tuned") == 2
    message = capsys.readouterr().err
    read = f"solution/operators/catalog/rms_norm.py:{line}: reads .memory_allocated"
    assert f"{read}: a kernel may not ask where or when it runs" in message
    assert not (tmp_path / "tuned").exists()


def test_the_shipped_h200_profile_makes_no_read_its_baselines_do_not():
    """What `tuned/h200` installed passes the same check install now makes."""
    from controller.profile_install import _task_baseline
    from gates.evaluator.detectors.environment_probes import source_probes
    from gates.tasks.solution import load_solution

    profile = json.loads((ROOT / "tuned" / "h200" / "profile.json").read_text())
    for operator in profile["operators"]:
        solution = load_solution(ROOT / "tuned" / "h200" / operator / "solution")
        baseline = _task_baseline(operator, ROOT, captured=False)
        texts = {source.path: source.content for source in solution.sources}
        known = {source.path: source.content for source in baseline.sources}
        assert source_probes(texts, known) == [], operator


def test_a_tampered_installed_file_refuses_to_load_naming_the_file(export, tmp_path):
    assert install(export, tmp_path) == 0
    installed = (
        tmp_path / "fast" / "rms_norm" / "solution" / "operators" / "catalog" / "rounding.py"
    )
    installed.write_text(installed.read_text() + "\nROUNDING_HACK = 1\n")
    with pytest.raises(ProfileError, match="rms_norm/solution/operators/catalog/rounding.py does"):
        KernelSelection("fast", tuned_root=tmp_path, allow_unverified=True).resolve("rms_norm")


def test_installed_files_are_ruff_clean(export, tmp_path):
    """The profile is committed in `tuned/`, where the repository's ruff settings apply."""
    assert install(export, tmp_path) == 0
    config = str(ROOT / "pyproject.toml")
    for command in (["check"], ["format", "--check"]):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--config", config, str(tmp_path / "fast")],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_a_second_operator_joins_the_profile_and_both_load(export, tmp_path):
    other = make_export(tmp_path / "other", "gated_residual")
    assert install(export, tmp_path / "tuned") == 0
    assert install(other, tmp_path / "tuned") == 0
    selection = KernelSelection("fast", tuned_root=tmp_path / "tuned", allow_unverified=True)
    assert selection.resolve("rms_norm").tuned is not None
    assert selection.resolve("gated_residual").tuned is not None
    profile = json.loads((tmp_path / "tuned" / "fast" / "profile.json").read_text())
    assert sorted(profile["operators"]) == ["gated_residual", "rms_norm"]
