"""Render an operator declaration into FlashInfer Trace entities: definition and workloads.

The rendering is pure and deterministic, so the evaluator can re-render a declaration and
refuse a task package that no longer matches the operator it claims to describe.
"""

import ast
import inspect
import textwrap
import types

from gates.errors import GateError
from gates.python_source import parse_python
from gates.tasks.definition import ConstAxis, Definition, TraceTensor, VarAxis
from gates.tasks.trace import Trace
from gates.tasks.workload import RandomInput, ScalarInput, Workload
from operators.accuracy import MAX_RATIO, RMS_RATIO
from operators.declaration import Axis, OperatorDeclaration


def _var_description(axis: Axis) -> str | None:
    """A var axis's description; a product axis says what it is the product of (the format
    has no field for it, and each workload gives its size)."""
    product = " x ".join(axis.product_of)
    if product:
        return f"{axis.description} ({product})" if axis.description else product
    return axis.description or None


def render_definition(declaration: OperatorDeclaration) -> Definition:
    """The declaration as a FlashInfer definition; params become scalar inputs."""
    axes = {
        axis.name: (
            ConstAxis(value=axis.value, description=axis.description or None)
            if axis.kind == "const"
            else VarAxis(description=_var_description(axis))
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
    """The Torch reference as standalone source: its imports, constants and helpers (each with
    its defaults, whose names are gathered as the body's are), the function itself without its
    defaults, and a `run` wrapper that passes every declared input and parameter (a default of
    any other parameter is refused: `run` would not pass it)."""
    function = declaration.reference
    tensor_names = [spec.name for spec in declaration.inputs]
    passed = set(tensor_names) | set(declaration.params)
    unpassed = [
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty and name not in passed
    ]
    if unpassed:
        raise GateError(
            f"reference {function.__name__}'s parameter {unpassed[0]!r} has a default but is "
            "neither an input nor a param of the declaration: `run` would not pass it"
        )
    imports, constants, functions = {"import torch"}, [], []
    _gather(function, imports, constants, functions, set(), drop_defaults=True)
    parameters = ", ".join(tensor_names + list(declaration.params))
    arguments = ", ".join(tensor_names + [f"{name}={name}" for name in declaration.params])
    parts = ["\n".join(sorted(imports))]
    if constants:
        parts.append("\n".join(constants))
    parts.extend(functions)
    parts.append(f"def run({parameters}):\n    return {function.__name__}({arguments})")
    return "\n\n\n".join(parts) + "\n"


def _gather(
    function, imports: set, constants: list, functions: list, seen: set, drop_defaults=False
) -> None:
    """Add `function` after everything it names from its own module (its defaults too, unless
    dropped: the reference's, whose parameters `run` passes)."""
    if function.__name__ in seen:
        return
    seen.add(function.__name__)
    if function.__closure__:
        names = ", ".join(function.__code__.co_freevars)
        raise GateError(
            f"reference {function.__name__} closes over {names}, which cannot be inlined"
        )
    tree = parse_python(textwrap.dedent(inspect.getsource(function)))
    definition = tree.body[0]
    if drop_defaults:
        definition.args.defaults = []
        definition.args.kw_defaults = [None] * len(definition.args.kwonlyargs)
    namespace = function.__globals__
    for name in sorted({n.id for n in ast.walk(definition) if isinstance(n, ast.Name)}):
        if name not in namespace or name in seen:
            continue
        value = namespace[name]
        if isinstance(value, types.ModuleType):
            module = value.__name__
            imports.add(f"import {module}" if module == name else f"import {module} as {name}")
        elif isinstance(value, types.FunctionType) and value.__module__ == function.__module__:
            _gather(value, imports, constants, functions, seen)
        elif isinstance(value, bool | int | float | str):
            constants.append(f"{name} = {value!r}")
            seen.add(name)
        else:  # a class, an instance, a function of another module: nothing to write it as
            raise GateError(f"reference {function.__name__} uses {name!r}, which cannot be inlined")
    functions.append(ast.unparse(definition))


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
        "reason": contract.reason,
        "comparison": (
            "raw bytes equal"
            if contract.mode == "bit_exact"
            else f"per output and input set, against the FP64 oracle: RMS error <= {RMS_RATIO}x "
            f"and max |error| <= {MAX_RATIO}x the worse of the stock formulation and the "
            "reference in the model dtype on the same set; NaN/Inf where they are finite fails"
        ),
        "oracle": (
            "ref: the reference run with every float in float64, rounded once to the output dtype"
            if declaration.oracle == "float64"
            else "ref: the reference as written"
        ),
    }


def render_evaluation_settings(declaration: OperatorDeclaration) -> dict:
    """What the evaluator may allow for this task beyond its defaults."""
    return {
        "cuda_graphs": bool(getattr(declaration, "cuda_graphs", False)),
        "library_products": bool(getattr(declaration, "library_products", False)),
        "extra_allowed_ops": sorted(getattr(declaration, "allowed_aten_ops", ()) or ()),
    }


def _is_expression(text: str) -> bool:
    try:
        parse_python(text, mode="eval")
    except SyntaxError:
        return False
    return True
