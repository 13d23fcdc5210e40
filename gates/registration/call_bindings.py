"""What a declaration's axes were at each call the selected call sites made in the parity runs.

The parity probe counts every registry call by call site and by the dtypes and shapes passed
and returned. Binding one such signature to the declaration's tensor specs gives each axis its
size at that call (leading axes beyond a spec's rank fold into its first axis, as row-wise
kernels flatten them), or says why the call does not fit the declaration at all.
"""

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from gates.registration.call_sites import CallSite
from operators.declaration import OperatorDeclaration, TensorSpec


class SeenCall(BaseModel):
    """One distinct signature the selected call sites passed to the operator, and how often."""

    model_config = ConfigDict(frozen=True)

    arguments: tuple[tuple[Any, ...], ...]
    keywords: tuple[tuple[str, tuple[Any, ...]], ...]
    results: tuple[tuple[Any, ...], ...]
    count: int
    sites: tuple[str, ...]

    def describe(self) -> str:
        """`bfloat16[1, 8, 64], eps=1e-06 -> bfloat16[1, 8, 64]`."""
        inputs = [_signature_text(value) for value in self.arguments]
        inputs += [f"{name}={_signature_text(value)}" for name, value in self.keywords]
        outputs = ", ".join(_signature_text(value) for value in self.results)
        return f"{', '.join(inputs)} -> {outputs}"


class Binding(BaseModel):
    """The axis sizes one seen call gives the declaration, or why it does not fit."""

    model_config = ConfigDict(frozen=True)

    sizes: dict[str, int] = {}
    problem: str | None = None


def seen_calls(
    configurations: dict[str, dict[str, Any]],
    drivers: list[str],
    operator: str,
    sites: list[CallSite],
) -> list[SeenCall]:
    """Every distinct signature of `operator` at the selected sites in the named drivers."""
    wanted = {(site.path, site.qualname) for site in sites}
    counts: Counter = Counter()
    where: dict[tuple, set[str]] = {}
    for driver in drivers:
        for op, file, qualname, arguments, keywords, results, n in configurations.get(
            driver, {}
        ).get("calls", []):
            if op != operator or (file, qualname) not in wanted:
                continue
            key = (_frozen(arguments), _frozen(keywords), _frozen(results))
            counts[key] += n
            where.setdefault(key, set()).add(f"{file}:{qualname}")
    return [
        SeenCall(
            arguments=arguments,
            keywords=keywords,
            results=results,
            count=count,
            sites=tuple(sorted(where[(arguments, keywords, results)])),
        )
        for (arguments, keywords, results), count in sorted(counts.items(), key=repr)
    ]


def bind(declaration: OperatorDeclaration, call: SeenCall) -> Binding:
    """Each axis's size at `call`, from its input and output tensors, or the first misfit."""
    inputs = {spec.name: spec for spec in declaration.inputs}
    params = list(declaration.params)
    passed: dict[str, tuple] = {}
    names = list(inputs) + params
    if len(call.arguments) > len(names):
        return Binding(problem=f"passes {len(call.arguments)} arguments, declared {names}")
    passed.update(zip(names, call.arguments, strict=False))
    for keyword, value in call.keywords:
        if keyword not in inputs and keyword not in params:
            return Binding(problem=f"passes {keyword}=, which is neither an input nor a param")
        passed[keyword] = value
    missing = [name for name in inputs if name not in passed]
    if missing:
        return Binding(problem=f"does not pass the declared inputs {missing}")
    sizes: dict[str, int] = {}
    tensors = [(inputs[name], passed[name]) for name in inputs]
    if len(call.results) != len(declaration.outputs):
        count = len(declaration.outputs)
        return Binding(problem=f"returns {len(call.results)} values, declared {count} outputs")
    tensors += list(zip(declaration.outputs, call.results, strict=True))
    for spec, value in tensors:
        problem = _bind_tensor(spec, value, sizes)
        if problem:
            return Binding(problem=problem)
    return Binding(sizes=sizes)


def _bind_tensor(spec: TensorSpec, value: tuple, sizes: dict[str, int]) -> str | None:
    name = spec.name
    if not value or value[0] != "tensor":
        return f"passes a {value[0] if value else 'nothing'} as {name}, declared a tensor"
    _, dtype, shape = value
    if dtype != spec.dtype:
        return f"{name} is {dtype} at the call sites, declared {spec.dtype}"
    axes = list(spec.shape)
    shape = list(shape)
    if len(shape) < len(axes) or (len(shape) > len(axes) and not axes):
        return f"{name} has shape {shape} at the call sites, declared ({', '.join(axes)})"
    if len(shape) > len(axes):
        folded = len(shape) - len(axes) + 1
        leading = 1
        for size in shape[:folded]:
            leading *= size
        shape = [leading] + shape[folded:]
    for axis, size in zip(axes, shape, strict=True):
        if sizes.setdefault(axis, size) != size:
            return f"axis {axis} is {sizes[axis]} in one tensor and {size} in {name}"
    return None


def _frozen(value):
    if isinstance(value, list | tuple):
        return tuple(_frozen(item) for item in value)
    return value


def _signature_text(value: tuple) -> str:
    if value and value[0] == "tensor":
        return f"{value[1]}[{', '.join(str(size) for size in value[2])}]"
    return str(value[1]) if len(value) > 1 else "?"
