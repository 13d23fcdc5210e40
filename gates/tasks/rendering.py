"""Render an operator declaration into FlashInfer Trace entities: definition and workloads.

The rendering is pure and deterministic, so the evaluator can re-render a declaration and
refuse a task package that no longer matches the operator it claims to describe.
"""

import ast
import inspect
import textwrap

from gates.tasks.definition import ConstAxis, Definition, TraceTensor, VarAxis
from gates.tasks.trace import Trace
from gates.tasks.workload import RandomInput, ScalarInput, Workload
from operators.declaration import OperatorDeclaration


def render_definition(declaration: OperatorDeclaration) -> Definition:
    """The declaration as a FlashInfer definition; params become scalar inputs."""
    axes = {
        axis.name: (
            ConstAxis(value=axis.value, description=axis.description or None)
            if axis.kind == "const"
            else VarAxis(description=axis.description or None)
        )
        for axis in declaration.axes
    }
    inputs = {
        spec.name: TraceTensor(
            shape=list(spec.shape), dtype=spec.dtype, description=spec.description or None
        )
        for spec in declaration.inputs
    }
    for name in declaration.params:
        inputs[name] = TraceTensor(shape=[], dtype="float32", description="scalar parameter")
    outputs = {
        spec.name: TraceTensor(
            shape=list(spec.shape), dtype=spec.dtype, description=spec.description or None
        )
        for spec in declaration.outputs
    }
    expressions = [c for c in declaration.constraints if _is_expression(c)]
    prose = [c for c in declaration.constraints if not _is_expression(c)]
    description = declaration.summary
    if prose:
        description += " Constraints: " + "; ".join(prose) + "."
    return Definition(
        name=declaration.name,
        op_type=declaration.name,
        axes=axes,
        inputs=inputs,
        outputs=outputs,
        reference=reference_source(declaration),
        description=description,
        tags=["kernel-controller", f"contract:{declaration.contract.mode}"],
        constraints=expressions or None,
    )


def reference_source(declaration: OperatorDeclaration) -> str:
    """The Torch reference's own source plus a `run` that takes every input by name."""
    function = declaration.reference
    body = textwrap.dedent(inspect.getsource(function))
    tensor_names = [spec.name for spec in declaration.inputs]
    parameters = ", ".join(tensor_names + list(declaration.params))
    arguments = ", ".join(tensor_names + [f"{name}={name}" for name in declaration.params])
    return (
        "import torch\n\n\n"
        f"{body.rstrip()}\n\n\n"
        f"def run({parameters}):\n"
        f"    return {function.__name__}({arguments})\n"
    )


def render_workloads(declaration: OperatorDeclaration) -> list[Trace]:
    """One workload trace per declared workload, weighted, with params as scalar inputs."""
    traces = []
    for workload in declaration.workloads:
        inputs: dict[str, RandomInput | ScalarInput] = {
            spec.name: RandomInput() for spec in declaration.inputs
        }
        for name, value in declaration.params.items():
            inputs[name] = ScalarInput(value=value)
        traces.append(
            Trace(
                definition=declaration.name,
                workload=Workload(
                    uuid=f"{declaration.name}-{workload.name}",
                    axes=dict(workload.axes),
                    inputs=inputs,
                ),
                weight=workload.weight,
            )
        )
    return traces


def render_contract(declaration: OperatorDeclaration) -> dict:
    """The numerical contract with its resolved tolerances, for readers and other tools."""
    contract = declaration.contract
    return {
        "operator": declaration.name,
        "mode": contract.mode,
        "roundings": contract.roundings,
        "atol": contract.atol,
        "rtol": contract.rtol,
        "reason": contract.reason,
        "comparison": (
            "raw bytes equal"
            if contract.mode == "bit_exact"
            else "|got-ref| <= atol + rtol*|ref| in float64; NaN/Inf where ref is finite fails"
        ),
    }


def render_evaluation_settings(declaration: OperatorDeclaration) -> dict:
    """What the evaluator may allow for this task beyond its defaults."""
    return {
        "cuda_graphs": bool(getattr(declaration, "cuda_graphs", False)),
        "extra_allowed_ops": sorted(getattr(declaration, "allowed_aten_ops", ()) or ()),
    }


def _is_expression(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return True
