"""The vision MLP keeps exactly two unrouted tanh-GELU call sites for the registration demo."""

import ast
from pathlib import Path

from examples.parity import tiny_batch1
from operators import record_registry_hits, use_kernel_profile

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXPECTED_SITES = {("vision.py", "VisionBlock.forward"), ("vision.py", "VisionProjector.forward")}


def tanh_gelu_call_sites(source: str) -> list[str]:
    """Qualnames of functions that call `F.gelu(..., approximate="tanh")` directly."""
    sites = []

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, [*scope, child.name])
                continue
            if isinstance(child, ast.Call) and _is_tanh_gelu(child):
                sites.append(".".join(scope))
            visit(child, scope)

    visit(ast.parse(source), [])
    return sites


def _is_tanh_gelu(call: ast.Call) -> bool:
    function = call.func
    named_gelu = isinstance(function, ast.Attribute) and function.attr == "gelu"
    named_gelu = named_gelu and isinstance(function.value, ast.Name) and function.value.id == "F"
    tanh = any(
        keyword.arg == "approximate"
        and isinstance(keyword.value, ast.Constant)
        and keyword.value.value == "tanh"
        for keyword in call.keywords
    )
    return named_gelu and tanh


def registry_calls_in(source: str) -> list[str]:
    """Names of `ops.<name>(...)` calls in the source."""
    return [
        node.func.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "ops"
    ]


def test_exactly_two_unrouted_gelu_sites_in_two_functions():
    found = set()
    count = 0
    for path in sorted(EXAMPLES.rglob("*.py")):
        sites = tanh_gelu_call_sites(path.read_text())
        count += len(sites)
        found |= {(path.name, site) for site in sites}
    assert count == 2
    assert found == EXPECTED_SITES


def test_the_vision_module_does_not_call_the_registry():
    assert registry_calls_in((EXAMPLES / "vision.py").read_text()) == []


def test_the_site_finder_sees_a_gelu_and_a_routed_one():
    source = (
        "class VisionBlock:\n"
        "    def forward(self, x):\n"
        "        y = F.gelu(x, approximate='tanh')\n"
        "        return ops.gelu_tanh(y) + F.gelu(x)\n"
    )
    assert tanh_gelu_call_sites(source) == ["VisionBlock.forward"]
    assert registry_calls_in(source) == ["gelu_tanh"]


def test_no_registry_hit_comes_from_the_vision_file():
    with use_kernel_profile("torch"), record_registry_hits() as hits:
        tiny_batch1()
    files = {Path(file).name for (_operator, file, _qualname) in hits}
    assert "vision.py" not in files
    assert {"prefix_encoder.py", "action_expert.py", "layers.py"} <= files
