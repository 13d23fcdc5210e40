"""benchmarks/gemm_probe.py: both Triton products agree with the BLAS under the interpreter,
and its agreement check refuses a result one BF16 step per element too far off."""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import gemm_probe  # noqa: E402


def test_the_probe_runs_under_the_interpreter_and_writes_its_report(tmp_path):
    assert gemm_probe.main(["--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "gemm_probe.json").read_text())
    results = report["shapes"]["small"]["us"]
    assert set(results) == {"pointer_m32_n32_k32_w1_s1", "descriptor_m32_n32_k32_w1_s1"}
    assert set(results.values()) == {"agrees (not timed)"}


def test_a_product_off_by_a_few_steps_disagrees():
    blas = torch.randn(8, 16).to(torch.bfloat16)
    assert gemm_probe.agrees(blas.clone(), blas)
    assert not gemm_probe.agrees((blas.float() * 1.03).to(torch.bfloat16), blas)
