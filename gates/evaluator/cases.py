"""The cases one evaluation runs: workloads x seeds x distributions, plus hidden workloads.

Both evaluator processes derive the same plan from the request's nonce, so no list of cases
or seeds is ever written where the solution could read it ahead of time; the hidden
workloads are derived here from the declaration and never appear in a task package. On CPU
the sizes are scaled down for the interpreter, plus one hidden case at the smallest real
size and one at a real size the nonce chooses, so a solution that is right only on small
inputs does not pass.
"""

import hashlib

from pydantic import BaseModel, ConfigDict

from operators.declaration import DISTRIBUTIONS, OperatorDeclaration, Workload

SEEDS_PER_WORKLOAD = 3
CPU_SMALLEST_SCALED = 2
# The largest real workload the interpreter runs as a hidden case (about a second a call).
CPU_REAL_SIZE_ELEMENTS = 1 << 20


class Case(BaseModel):
    """One call of the candidate: a workload's sizes, a seed and an input distribution."""

    model_config = ConfigDict(frozen=True)

    key: str
    workload: str
    axes: dict[str, int]
    seed: int
    distribution: str
    hidden: bool = False
    repeat: bool = False
    captured: str | None = None  # the captured workload whose layouts the inputs take
    fixture: bool = False  # the captured call's own inputs instead of drawn ones

    def as_workload(self) -> Workload:
        return Workload(name=self.workload, axes=self.axes)


def plan_cases(
    declaration: OperatorDeclaration, nonce: str, device: str, captured: tuple = ()
) -> list[Case]:
    """Every case of one evaluation, in the order the candidate is called; a captured task's
    workloads (`captured_cases.load_captured`) add their fixture and drawn cases."""
    declared = [(w.name, dict(w.axes)) for w in declaration.workloads]
    if device == "cpu":
        declared = _completed(declaration, _scaled_for_interpreter(declared))
    hidden = _completed(declaration, _hidden_workloads(declared, nonce))
    cases = []
    for name, axes in declared:
        for distribution in DISTRIBUTIONS:
            for seed_index in range(SEEDS_PER_WORKLOAD):
                repeat = device != "cpu" or (seed_index == 0 and distribution == "normal")
                cases.append(_case(nonce, name, axes, seed_index, distribution, False, repeat))
    for name, axes in hidden:
        for distribution in DISTRIBUTIONS:
            cases.append(_case(nonce, name, axes, 0, distribution, True, False))
    if device == "cpu":
        for name, axes in _real_sizes(declaration, nonce):
            cases.append(_case(nonce, name, axes, 0, "normal", True, False))
    if captured:
        from gates.evaluator.captured_cases import captured_case_specs

        cases.extend(Case(**spec) for spec in captured_case_specs(list(captured), nonce))
    return cases


def _completed(declaration: OperatorDeclaration, sized: list[tuple[str, dict]]):
    """Sizes chosen axis by axis, with each product axis set from its factors."""
    return [(name, declaration.completed(axes)) for name, axes in sized]


def _real_sizes(declaration: OperatorDeclaration, nonce: str) -> list[tuple[str, dict]]:
    """Real workload sizes for the interpreter: the smallest, and one more chosen by the nonce
    among the others the interpreter can afford (a kernel wrong only past some row count, on
    sizes the scaled cases never reach, fails there)."""
    by_size = sorted(declaration.workloads, key=lambda w: _input_elements(declaration, w))
    chosen = [("hidden_full", dict(by_size[0].axes))]
    affordable = [
        w for w in by_size[1:] if _input_elements(declaration, w) <= CPU_REAL_SIZE_ELEMENTS
    ]
    if affordable:
        entropy = hashlib.sha256(f"{nonce}:real".encode()).digest()[0]
        chosen.append(("hidden_real", dict(affordable[entropy % len(affordable)].axes)))
    return chosen


def _input_elements(declaration: OperatorDeclaration, workload: Workload) -> int:
    total = 0
    for spec in declaration.inputs:
        count = 1
        for size in declaration.shape_of(spec, workload):
            count *= size
        total += count
    return total


def _case(nonce, name, axes, seed_index, distribution, hidden, repeat) -> Case:
    key = f"{name}/{distribution}/{seed_index}"
    digest = hashlib.sha256(f"{nonce}:{key}".encode()).digest()
    seed = int.from_bytes(digest[:4], "little") & 0x7FFFFFFF
    return Case(
        key=key,
        workload=name,
        axes=axes,
        seed=seed,
        distribution=distribution,
        hidden=hidden,
        repeat=repeat,
    )


def _scaled_for_interpreter(declared):
    """Small sizes that keep each axis's order and its zeros, so the interpreter is fast."""
    ranks: dict[str, list[int]] = {}
    for _, axes in declared:
        for axis, value in axes.items():
            ranks.setdefault(axis, [])
            if value > CPU_SMALLEST_SCALED and value not in ranks[axis]:
                ranks[axis].append(value)
    for values in ranks.values():
        values.sort()
    scaled = []
    for name, axes in declared:
        small = {}
        for axis, value in axes.items():
            if value <= CPU_SMALLEST_SCALED:
                small[axis] = value
            else:
                small[axis] = CPU_SMALLEST_SCALED + 1 + ranks[axis].index(value)
        scaled.append((name, small))
    return scaled


def _hidden_workloads(declared, nonce: str):
    """Sizes the task never shows: an odd size a nonce-chosen step past the largest of each
    axis, and every axis at 1."""
    largest: dict[str, int] = {}
    for _, axes in declared:
        for axis, value in axes.items():
            largest[axis] = max(largest.get(axis, 0), value)
    steps = hashlib.sha256(f"{nonce}:hidden".encode()).digest()
    beyond = {
        axis: _odd_size_beyond(value, steps[index % len(steps)])
        for index, (axis, value) in enumerate(sorted(largest.items()))
    }
    ones = dict.fromkeys(largest, 1)
    hidden = [("hidden_odd", beyond)]
    if all(ones != axes for _, axes in declared):
        hidden.append(("hidden_unit", ones))
    return hidden


def _odd_size_beyond(value: int, entropy: int) -> int:
    """An odd size past `value`: a few past on the interpreter's small sizes, up to 64 past
    on a GPU's, by a nonce-chosen step."""
    span = 2 if value <= CPU_SMALLEST_SCALED + 8 else 64
    size = value + 1 + entropy % span
    return size if size % 2 else size + 1
