"""Gate: every operator BASE's registry resolves is still exactly what it was.

A registration adds one operator. Another operator's loosened contract, a production kernel
changed in its own file or in a helper it imports, or a second declaration that takes its name
would all leave the model's outputs unchanged, so no parity gate sees them; this gate compares
the two registries' snapshots (declaration data, the identity of the reference and preferred
kernel with everything they read, what every kernel profile resolves to) and the digests of the
files each BASE operator depends on, read by the controller in both trees.

Code that runs only when called (the new operator's reference or kernel, on its first call)
could change another operator after every import-time snapshot was taken, so BASE's snapshot,
taken in a process that never imported the candidate's modules, is compared again with the
descriptions the candidate's parity probe and kernel runner write after that code has run.
"""

from pathlib import Path

from gates.registration.snapshots import OperatorSnapshot, RegistrySnapshot, file_digests
from gates.verdict import Verdict, first_of

GATE = "operator_identity"
OUT_OF_SCOPE = (
    "a registration leaves every other operator as it was; changing one is out of scope "
    "for the register flow"
)
PARTS = {
    "declaration": "its declaration",
    "reference": "its reference",
    "preferred": "its preferred kernel",
    "stock": "its stock implementation",
    "other_implementations": "another of its callables",
    "resolved": "what a kernel profile resolves it to",
    "bound_in": "the module names that hold its declaration",
    "files": "the files it depends on",
}


def check(
    base_tree: Path,
    candidate_tree: Path,
    base: RegistrySnapshot,
    candidate: RegistrySnapshot,
    after_runs: dict[str, RegistrySnapshot] | None = None,
) -> Verdict:
    """Each BASE operator's snapshot and dependency files are unchanged in the candidate, and
    still unchanged in each description `after_runs` names (`after the parity run`: ...)."""
    if base.problem:
        return Verdict(gate=GATE, passed=False, summary=f"BASE: {base.problem}")
    if candidate.problem:
        return Verdict(gate=GATE, passed=False, summary=candidate.problem)
    differences: list[str] = []
    for name, before in sorted(base.operators.items()):
        after = candidate.operators.get(name)
        if after is None:
            differences.append(f"{name}: no longer registered")
            continue
        differences += [f"{name}: {text}" for text in _snapshot_differences(before, after)]
        differences += [
            f"{name}: depends on {file}, which the candidate "
            + ("removed" if digest is None else "changed")
            for file, digest in _changed_files(base_tree, candidate_tree, before.files)
        ]
    # After the import-time differences, so the summary blames a change the candidate's tree
    # makes on import on that tree, not on a run that merely saw it again.
    for when, after_run in (after_runs or {}).items():
        differences += changed_after_run(base, after_run, when)
    details = {"operators": sorted(base.operators), "differences": differences}
    if differences:
        summary = f"{first_of(differences)}: {OUT_OF_SCOPE}"
        return Verdict(gate=GATE, passed=False, summary=summary, details=details)
    summary = (
        f"all {len(base.operators)} operators of BASE's registry resolve exactly as before "
        f"under {len(base.profiles)} kernel profiles"
    )
    return Verdict(gate=GATE, passed=True, summary=summary, details=details)


def changed_after_run(base: RegistrySnapshot, after: RegistrySnapshot, when: str) -> list[str]:
    """How each BASE operator described after the candidate's code ran (`when`) differs from
    BASE's own snapshot, naming the operator and the field."""
    if after.problem:
        return [f"{when}: {after.problem}"]
    found = []
    for name, before in sorted(base.operators.items()):
        now = after.operators.get(name)
        if now is None:
            found.append(f"{name}: no longer registered {when}")
            continue
        found += [f"{name}: {when}, {text}" for text in _snapshot_differences(before, now)]
    return found


def _snapshot_differences(before: OperatorSnapshot, after: OperatorSnapshot) -> list[str]:
    found = []
    for part, words in PARTS.items():
        old, new = getattr(before, part), getattr(after, part)
        if old == new:
            continue
        if part == "declaration":
            found += [
                _field_change(field, old.get(field), new.get(field)) for field in _keys(old, new)
            ]
        elif part == "files":
            added, removed = sorted(set(new) - set(old)), sorted(set(old) - set(new))
            found.append(f"{words} changed (added {added or 'none'}, removed {removed or 'none'})")
        elif _name(old) != _name(new):
            found.append(f"{words} is now {_name(new)} (was {_name(old)})")
        else:
            found.append(f"{words} changed (first at {first_difference(old, new) or part})")
    return found


def _name(described) -> str | None:
    """The qualified name a snapshot gives a described function, if it is one."""
    if isinstance(described, dict):
        return described.get("function") or described.get("external")
    return None


def _keys(old: dict, new: dict) -> list[str]:
    return [key for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]


def _field_change(field: str, old, new) -> str:
    if field == "contract" and isinstance(old, dict) and isinstance(new, dict):
        return f"its contract changed from {_contract(old)} to {_contract(new)}"
    return f"its declaration's {field} changed (first at {first_difference(old, new) or field})"


def _contract(contract: dict) -> str:
    if contract.get("mode") == "no_less_accurate":
        return f"no_less_accurate with {contract.get('roundings')} BF16 roundings expected"
    return str(contract.get("mode"))


def first_difference(old, new, path: str = "") -> str | None:
    """The dotted path of the first place two JSON values differ, or None when equal."""
    if old == new:
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            if old.get(key) != new.get(key):
                return first_difference(old.get(key), new.get(key), f"{path}.{key}".lstrip("."))
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                return first_difference(a, b, f"{path}[{index}]")
    return path


def _changed_files(base_tree: Path, candidate_tree: Path, files: list[str]):
    before = file_digests(base_tree, files)
    after = file_digests(candidate_tree, files)
    return [(file, after[file]) for file in files if before[file] != after[file]]
