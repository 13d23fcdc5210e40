"""A bad operator declaration is rejected on construction, with the offending field named."""

import pytest
from pydantic import ValidationError

from operators.catalog.rms_norm import rms_norm_reference
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec, Workload
from operators.errors import OperatorError
from operators.registry import OperatorRegistry

GOOD = {
    "name": "scaled_rows",
    "summary": "rows times a weight",
    "axes": (Axis(name="tokens", kind="var"), Axis(name="hidden", kind="const", value=8)),
    "inputs": (
        TensorSpec(name="x", shape=("tokens", "hidden")),
        TensorSpec(name="weight", shape=("hidden",)),
    ),
    "outputs": (TensorSpec(name="y", shape=("tokens", "hidden")),),
    "reference": rms_norm_reference,
    "contract": Contract(mode="no_less_accurate", roundings=1, reason="one fused rounding"),
    "workloads": (Workload(name="small", axes={"tokens": 4}),),
}


def declare(**changes) -> OperatorDeclaration:
    return OperatorDeclaration(**{**GOOD, **changes})


def test_a_good_declaration_is_accepted():
    declaration = declare()
    assert declaration.axis_sizes(declaration.workloads[0]) == {"tokens": 4, "hidden": 8}


def test_var_axis_no_input_determines_is_rejected():
    axes = GOOD["axes"] + (Axis(name="experts", kind="var"),)
    workloads = (Workload(name="small", axes={"tokens": 4, "experts": 2}),)
    with pytest.raises(ValidationError, match="axes.experts: var axis is not determined"):
        declare(axes=axes, workloads=workloads)


def test_var_axis_only_an_output_names_is_still_rejected():
    axes = GOOD["axes"] + (Axis(name="experts", kind="var"),)
    outputs = (TensorSpec(name="y", shape=("experts", "hidden")),)
    workloads = (Workload(name="small", axes={"tokens": 4, "experts": 2}),)
    with pytest.raises(ValidationError, match="axes.experts"):
        declare(axes=axes, outputs=outputs, workloads=workloads)


def test_duplicate_tensor_name_is_rejected():
    outputs = (TensorSpec(name="x", shape=("tokens", "hidden")),)
    with pytest.raises(ValidationError, match="inputs/outputs: duplicate name 'x'"):
        declare(outputs=outputs)


def test_duplicate_axis_name_is_rejected():
    axes = GOOD["axes"] + (Axis(name="tokens", kind="var"),)
    with pytest.raises(ValidationError, match="axes: duplicate name 'tokens'"):
        declare(axes=axes)


def test_duplicate_operator_name_is_rejected_by_the_registry():
    registry = OperatorRegistry()
    registry.register(declare())
    with pytest.raises(OperatorError, match="operator 'scaled_rows' is already registered"):
        registry.register(declare(summary="another"))


def test_workload_missing_an_axis_is_rejected():
    workloads = (Workload(name="no_tokens", axes={}),)
    with pytest.raises(
        ValidationError, match=r"workloads.no_tokens: missing var axes \['tokens'\]"
    ):
        declare(workloads=workloads)


def test_workload_sizing_a_const_axis_is_rejected():
    workloads = (Workload(name="resized", axes={"tokens": 4, "hidden": 16}),)
    with pytest.raises(ValidationError, match=r"workloads.resized: \['hidden'\] are not var axes"):
        declare(workloads=workloads)


def test_tolerance_contract_with_zero_roundings_is_rejected():
    with pytest.raises(ValidationError, match="contract.roundings"):
        Contract(mode="no_less_accurate", roundings=0, reason="none")


def test_contract_without_a_reason_is_rejected():
    with pytest.raises(ValidationError, match="contract.reason"):
        Contract(mode="bit_exact", reason=" ")


def test_undeclared_axis_in_a_shape_is_rejected():
    inputs = (TensorSpec(name="x", shape=("tokens", "width")),) + GOOD["inputs"][1:]
    with pytest.raises(ValidationError, match="x.shape: axis 'width' is not declared"):
        declare(inputs=inputs)


def test_const_axis_without_a_size_is_rejected():
    with pytest.raises(ValidationError, match="axes.hidden.value"):
        Axis(name="hidden", kind="const")


def test_unknown_dtype_is_rejected():
    with pytest.raises(ValidationError, match="x.dtype"):
        TensorSpec(name="x", shape=("tokens",), dtype="bfloat17")


def test_workloads_may_not_be_empty():
    with pytest.raises(ValidationError, match="workloads"):
        declare(workloads=())


def flattened_rows(**changes) -> OperatorDeclaration:
    """residual (batch, tokens, hidden) beside `activated` (rows, hidden), rows = batch x
    tokens: the down projection's inputs in the model."""
    fields = {
        "axes": (
            Axis(name="batch", kind="var"),
            Axis(name="tokens", kind="var"),
            Axis(name="rows", kind="var", product_of=("batch", "tokens")),
            Axis(name="hidden", kind="const", value=8),
        ),
        "inputs": (
            TensorSpec(name="residual", shape=("batch", "tokens", "hidden")),
            TensorSpec(name="activated", shape=("rows", "hidden")),
        ),
        "outputs": (TensorSpec(name="y", shape=("batch", "tokens", "hidden")),),
        "workloads": (Workload(name="b2", axes={"batch": 2, "tokens": 5, "rows": 10}),),
    }
    return declare(**{**fields, **changes})


def test_a_product_axis_is_completed_from_its_factors_wherever_sizes_are_drawn():
    from gates.evaluator.cases import plan_cases
    from operators.catalog.checking import scaled_down

    declaration = flattened_rows()
    assert declaration.completed({"batch": 3, "tokens": 7, "rows": 99})["rows"] == 21
    shapes = [tuple(t.shape) for t in declaration.make_inputs(declaration.workloads[0])]
    assert shapes == [(2, 5, 8), (10, 8)]
    scaled = scaled_down(declaration).workloads
    assert [w.axes for w in scaled] == [{"batch": 3, "tokens": 3, "rows": 9}]
    for device in ("cpu", "cuda"):
        cases = plan_cases(declaration, "nonce", device)
        assert any(case.hidden for case in cases)
        for case in cases:
            assert case.axes["rows"] == case.axes["batch"] * case.axes["tokens"], case.key


def test_a_workload_that_breaks_a_product_axis_is_rejected():
    wrong = (Workload(name="b2", axes={"batch": 2, "tokens": 5, "rows": 9}),)
    with pytest.raises(ValidationError, match="workloads.b2: .* breaks a product axis"):
        flattened_rows(workloads=wrong)


@pytest.mark.parametrize(
    ("axis", "message"),
    [
        (Axis(name="rows", kind="var", product_of=("batch", "steps")), "'steps' is no other"),
        (Axis(name="rows", kind="var", product_of=("rows", "batch")), "'rows' is no other"),
    ],
)
def test_a_product_of_unknown_axes_is_rejected(axis, message):
    axes = (Axis(name="batch", kind="var"), Axis(name="tokens", kind="var"), axis)
    axes += (Axis(name="hidden", kind="const", value=8),)
    with pytest.raises(ValidationError, match=message):
        flattened_rows(axes=axes)


def test_only_a_var_axis_is_a_product():
    with pytest.raises(ValidationError, match="only a var axis is a product"):
        Axis(name="rows", kind="const", value=4, product_of=("batch",))
