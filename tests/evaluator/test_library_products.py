"""A candidate may call the BLAS products on operands it prepares (each call listed with its
operands), except where its task is the kernel's own work (attention): a baseline that is
three library products passes its own task, and a product inside attention is refused."""

import json
from pathlib import Path

import pytest

from gates.evaluator.evaluation import evaluate
from gates.tasks.generation import write_package
from operators import REGISTRY

pytestmark = pytest.mark.slow

ATTENTION_WITH_A_PRODUCT = """
import torch

from .operators.catalog.split_kv_attention import split_kv_attention_triton


def split_kv_attention(q, k_cache, v_cache, k, v, scale):
    torch.bmm(q[0, :1], k[0].transpose(-1, -2))  # a library product inside attention
    return split_kv_attention_triton(q, k_cache, v_cache, k, v, scale)
"""


def _package(name: str, root: Path) -> Path:
    folder, _ = write_package(REGISTRY.declaration(name), root)
    return folder


def test_a_baseline_of_library_products_passes_and_lists_each_call(tmp_path):
    task = _package("stacked_projection", tmp_path)
    result = evaluate(task, task / "solution", device="cpu")
    assert result.status == "PASSED", result.reason
    assert result.library_calls, "the products were not listed"
    assert all(call.startswith(("aten.mm", "aten.addmm")) for call in result.library_calls)
    assert any("bfloat16[" in call for call in result.library_calls)


def test_attention_may_not_call_a_library_product(tmp_path):
    task = _package("split_kv_attention", tmp_path)
    document = json.loads((task / "solution" / "solution.json").read_text())
    entry_file = document["spec"]["entry_point"].split("::")[0]
    document["name"] = "attention_with_a_product"
    document["spec"]["entry_point"] = "attention_with_a_product.py::split_kv_attention"
    document["sources"].append(
        {"path": "attention_with_a_product.py", "content": ATTENTION_WITH_A_PRODUCT}
    )
    assert any(source["path"] == entry_file for source in document["sources"])
    solution = tmp_path / "attention_with_a_product.json"
    solution.write_text(json.dumps(document))
    result = evaluate(task, solution, device="cpu")
    assert result.status == "REJECTED" and result.detector == "compute_fallback", result.reason
    assert "bmm" in result.reason


def test_a_baseline_is_judged_by_its_numerics_alone_and_a_candidate_cannot_ask_to_be_one(
    tmp_path,
):
    """Preflight judges the task's own kernel as its baseline: the same product inside
    attention that refuses a candidate passes there, noted; `controller evaluate`, which an
    agent can run, has no way to ask for that role."""
    from controller.cli import build_parser

    task = _package("split_kv_attention", tmp_path)
    document = json.loads((task / "solution" / "solution.json").read_text())
    document["name"] = "attention_with_a_product"
    document["spec"]["entry_point"] = "attention_with_a_product.py::split_kv_attention"
    document["sources"].append(
        {"path": "attention_with_a_product.py", "content": ATTENTION_WITH_A_PRODUCT}
    )
    solution = tmp_path / "attention_with_a_product.json"
    solution.write_text(json.dumps(document))
    result = evaluate(task, solution, device="cpu", judged_as="baseline")
    assert result.status == "PASSED", result.reason
    assert any("judged as the task's baseline" in note for note in result.notes)
    assert any(call.startswith("aten.bmm") for call in result.library_calls)
    with pytest.raises(SystemExit):
        build_parser().parse_args(
            ["evaluate", str(task), "--solution", str(solution), "--judged-as", "baseline"]
        )
