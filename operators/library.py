"""The registry's operators as `torch.library` custom ops, so `torch.compile` traces a routed
model without graph breaks.

An operator's preferred kernel becomes `kernel_controller::<name>`. On CUDA, a launcher marked
`compiler_visible` (its kernels all go through `kernel_launch.launch`) becomes a `triton_op`:
the compiler traces into it and schedules its Triton kernels with the rest of the graph.
Anywhere else (the Triton interpreter on a CPU, or a launcher that calls Triton directly) it
becomes an opaque `custom_op` whose fake implementation runs the reference on fake tensors
for the output shapes and dtypes. A tuned profile's kernels become the opaque
`kernel_controller::<name>_tuned`, which takes the number of the selection it was traced
under. Eager calls never go through these ops: they call the kernels directly, which keeps
the host cost and the eager ATen sequence what they were.
"""

from collections.abc import Callable
from typing import Any

import torch

from operators import triton_runtime
from operators.declaration import OperatorDeclaration, as_outputs

NAMESPACE = "kernel_controller"

_defined: dict[tuple[str, int], Any] = {}
_names_taken: set[str] = set()


def operator_schema(declaration: OperatorDeclaration, extra: str = "") -> str:
    """`(Tensor x, Tensor weight, float eps=1e-06) -> Tensor` from the declaration."""
    arguments = [f"Tensor {spec.name}" for spec in declaration.inputs]
    arguments += [f"float {name}={value!r}" for name, value in declaration.params.items()]
    if extra:
        arguments.append(extra)
    outputs = ", ".join("Tensor" for _ in declaration.outputs)
    returned = outputs if len(declaration.outputs) == 1 else f"({outputs})"
    return f"({', '.join(arguments)}) -> {returned}"


def preferred_op(declaration: OperatorDeclaration):
    """`kernel_controller::<name>` running the preferred kernel, defined once per kernel."""
    preferred = declaration.preferred
    key = (declaration.name, id(preferred))
    if key not in _defined:
        name = _free_name(declaration.name)
        schema = operator_schema(declaration)
        if triton_runtime.cuda_available() and getattr(preferred, "compiler_visible", False):
            # The schema comes from the launcher's annotations, which match the declaration.
            torch.library.triton_op(f"{NAMESPACE}::{name}", preferred, mutates_args=())
        else:
            _opaque(name, schema, declaration, _with_contiguous_outputs(preferred))
        _defined[key] = (getattr(torch.ops, NAMESPACE), name, preferred)
    return _op(key)


def tuned_op(declaration: OperatorDeclaration, run: Callable[..., Any]):
    """`kernel_controller::<name>_tuned(..., int selection)`: `run(selection, name, *args)` at
    run time, so a compiled graph calls the tuned kernels of the selection it was traced under."""
    key = (f"{declaration.name}_tuned", id(run))
    if key not in _defined:
        name = _free_name(f"{declaration.name}_tuned")
        schema = operator_schema(declaration, extra="*, int selection")

        def tuned(*operands: Any, selection: int) -> Any:
            return _contiguous(run(selection, declaration.name, *operands))

        _opaque(name, schema, declaration, tuned)
        _defined[key] = (getattr(torch.ops, NAMESPACE), name, run)
    return _op(key)


def _opaque(name, schema, declaration, implementation) -> None:
    operator = torch.library.custom_op(
        f"{NAMESPACE}::{name}", implementation, mutates_args=(), schema=schema
    )

    @operator.register_fake
    def _fake(*operands: Any, **_selection: Any) -> Any:
        outputs = as_outputs(declaration.reference(*operands))
        fresh = tuple(output.new_empty(output.shape) for output in outputs)
        return fresh if len(declaration.outputs) > 1 else fresh[0]


def _with_contiguous_outputs(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The compiler assumes the fake's contiguous strides, so the real outputs must match."""

    def contiguous_kernel(*args: Any) -> Any:
        return _contiguous(kernel(*args))

    return contiguous_kernel


def _contiguous(result: Any) -> Any:
    if isinstance(result, tuple | list):
        return tuple(output.contiguous() for output in result)
    return result.contiguous()


def _free_name(name: str) -> str:
    """`name`, or `name_2`, ...: another declaration under a taken name (a test's registry)
    gets its own op instead of redefining the catalog's."""
    candidate, suffix = name, 1
    while candidate in _names_taken:
        suffix += 1
        candidate = f"{name}_{suffix}"
    _names_taken.add(candidate)
    return candidate


def _op(key: tuple[str, int]):
    namespace, name, _kept_alive = _defined[key]
    return getattr(namespace, name)
