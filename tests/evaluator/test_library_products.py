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

from operators.catalog.split_kv_attention import split_kv_attention_triton


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
