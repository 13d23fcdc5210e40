"""Gate 2, structure: the operator is declared and every selected call site calls the registry."""

from target_fixture import (
    CATALOG_BASE,
    GELU_TANH,
    IMPORTS,
    IMPORTS_ROUTED,
    REQUEST,
    SITES,
    vision,
)

from gates.registration import structure
from gates.target import load_target_config


def judge(base_tree, candidate, probe):
    config = load_target_config(base_tree)
    return structure.check(
        base_tree, candidate, config, REQUEST.operator, list(SITES), probe(candidate)
    )


def test_accepts_both_sites_routed(base_tree, make_candidate, probe):
    verdict = judge(base_tree, make_candidate(), probe)
    assert verdict.passed, verdict.summary
    assert verdict.details["routed"] == {str(site): True for site in SITES}
    assert verdict.details["input_branches"] == []  # the reference reads no shape or value


def test_rejects_a_call_site_not_routed(base_tree, make_candidate, probe):
    candidate = make_candidate({"model/vision.py": vision(projector=False)})
    verdict = judge(base_tree, candidate, probe)
    assert not verdict.passed
    assert verdict.summary == (
        "call site model/vision.py:VisionProjector.forward does not call ops.gelu_tanh(...)"
    )


def test_rejects_a_site_that_keeps_the_old_expression(base_tree, make_candidate, probe):
    both = vision(keep_f=True).replace(
        "return ops.gelu_tanh(x) * 0.5",
        'return ops.gelu_tanh(x) * 0.5 + 0 * F.gelu(x, approximate="tanh")',
    )
    verdict = judge(base_tree, make_candidate({"model/vision.py": both}), probe)
    assert not verdict.passed
    assert "still calls F.gelu(x, approximate='tanh') (the old expression)" in verdict.summary


def test_a_reference_call_on_the_registry_result_is_downstream(base_tree, make_candidate, probe):
    # A fused MLP keeps its down projection, an F.linear like the reference's, on the result.
    downstream = vision().replace(
        "        return ops.gelu_tanh(x) * 0.5",
        "        activated = ops.gelu_tanh(x)\n"
        '        return F.gelu(activated, approximate="tanh")',
    )
    downstream = downstream.replace(IMPORTS_ROUTED, IMPORTS + "\nfrom operators import ops\n")
    verdict = judge(base_tree, make_candidate({"model/vision.py": downstream}), probe)
    assert verdict.passed, verdict.summary


def test_a_reference_call_on_a_value_made_from_the_result_is_downstream(
    base_tree, make_candidate, probe
):
    # Attention's output projection reads what attention made of the projected queries.
    downstream = vision().replace(
        "        return ops.gelu_tanh(x) * 0.5",
        "        activated = ops.gelu_tanh(x)\n"
        "        merged = activated * 0.5\n"
        '        return F.gelu(merged, approximate="tanh")',
    )
    downstream = downstream.replace(IMPORTS_ROUTED, IMPORTS + "\nfrom operators import ops\n")
    verdict = judge(base_tree, make_candidate({"model/vision.py": downstream}), probe)
    assert verdict.passed, verdict.summary


def test_rejects_the_old_expression_on_a_value_not_made_from_the_result(
    base_tree, make_candidate, probe
):
    kept = vision().replace(
        "        return ops.gelu_tanh(x) * 0.5",
        "        activated = ops.gelu_tanh(x)\n"
        "        scaled = x * 0.5\n"
        '        return activated + F.gelu(scaled, approximate="tanh")',
    )
    kept = kept.replace(IMPORTS_ROUTED, IMPORTS + "\nfrom operators import ops\n")
    verdict = judge(base_tree, make_candidate({"model/vision.py": kept}), probe)
    assert not verdict.passed
    assert "still calls F.gelu(scaled, approximate='tanh') (the old expression)" in verdict.summary


def test_rejects_the_old_expression_beside_a_bound_registry_result(
    base_tree, make_candidate, probe
):
    kept = vision().replace(
        "        return ops.gelu_tanh(x) * 0.5",
        "        activated = ops.gelu_tanh(x)\n"
        '        return activated + F.gelu(x, approximate="tanh")',
    )
    kept = kept.replace(IMPORTS_ROUTED, IMPORTS + "\nfrom operators import ops\n")
    verdict = judge(base_tree, make_candidate({"model/vision.py": kept}), probe)
    assert not verdict.passed
    assert "still calls F.gelu(x, approximate='tanh') (the old expression)" in verdict.summary


def test_rejects_an_operator_that_is_not_registered(base_tree, make_candidate, probe):
    verdict = judge(
        base_tree, make_candidate({"operators/catalog/__init__.py": CATALOG_BASE}), probe
    )
    assert not verdict.passed
    assert verdict.summary.startswith("operator 'gelu_tanh' is not registered by operators.catalog")


def test_rejects_a_registry_that_does_not_import(base_tree, make_candidate, probe):
    broken = {"operators/catalog/gelu_tanh.py": "raise RuntimeError('broken on purpose')\n"}
    verdict = judge(base_tree, make_candidate(broken), probe)
    assert not verdict.passed
    assert "importing the registry failed: RuntimeError: broken on purpose" in verdict.summary


def test_conditions_of_the_new_reference_on_its_inputs_are_listed_for_the_reviewer(
    base_tree, make_candidate, probe
):
    """A branch that only an undeclared shape reaches passes every gate; the reviewer is shown
    it (the structure gate still passes: listing refuses nothing)."""
    hidden = GELU_TANH.replace(
        '    return F.gelu(x, approximate="tanh")',
        "    rows = x.shape[0]\n"
        "    if rows > 4096:\n"
        "        return x * 0\n"
        '    return F.gelu(x, approximate="tanh") if x.abs().max() < 1e4 else x',
    )
    candidate = make_candidate({"operators/catalog/gelu_tanh.py": hidden})
    verdict = judge(base_tree, candidate, probe)
    assert verdict.passed, verdict.summary
    assert verdict.details["input_branches"] == [
        {"line": 13, "kind": "if", "condition": "rows > 4096", "reads": "shape"},
        {
            "line": 15,
            "kind": "conditional expression",
            "condition": "x.abs().max() < 10000.0",
            "reads": "values",
        },
    ]
