"""The GPU benchmark script's own logic, run on the CPU: its dry run, its timing loop's resets."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "catalog_gpu.py"


def load_script():
    spec = importlib.util.spec_from_file_location("catalog_gpu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dry_run_checks_contracts_and_writes_the_table_and_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OUT", str(tmp_path))
    script = load_script()
    argv = ["--dry-run", "--samples", "2", "--seeds", "1", "--operators", "gated_residual"]
    assert script.main(argv) == 0
    table = capsys.readouterr().out
    assert "| operator | workload | eager us | triton us | speedup | contract ok |" in table
    assert "| gated_residual | batch3_tokens5 |" in table
    report = json.loads((tmp_path / "catalog_gpu.json").read_text())
    assert [row["workload"] for row in report["rows"]] == ["batch1_tokens1", "batch3_tokens5"]
    assert all(row["contract"] == "ok" and row["triton_us"] > 0 for row in report["rows"])
    assert (tmp_path / "catalog_gpu.md").read_text().strip() == table.strip()


def test_every_sample_starts_from_pristine_inputs_and_roles_interleave():
    script = load_script()
    seen: list[tuple[str, float]] = []

    def in_place(role):
        def run(x):
            seen.append((role, float(x[0])))
            x.add_(1.0)

        return run

    pristine = [torch.zeros(4)]
    flush = torch.empty(16, dtype=torch.uint8)
    times = script.median_times({"a": in_place("a"), "b": in_place("b")}, pristine, {}, 5, flush)
    timed = seen[2 * script.WARMUP_CALLS :]
    assert timed == [("a", 0.0), ("b", 0.0)] * 5
    assert set(times) == {"a", "b"} and all(value >= 0 for value in times.values())
    assert torch.equal(pristine[0], torch.zeros(4))


def test_a_real_measurement_needs_a_thousand_samples(capsys):
    script = load_script()
    with pytest.raises(SystemExit) as exit_:
        script.parse_arguments(["--samples", "999"])
    assert exit_.value.code == 2
    assert "--samples must be >= 1000" in capsys.readouterr().err
