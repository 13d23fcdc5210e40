"""Gate 1, scope: the candidate changed only what a registration may change.

Rejects paths outside `allowed_paths`, any change to `protected_paths`, symlinks, binary files,
an existing test function that was edited or removed (so a test cannot be weakened), and
changed source that patches other modules at run time (`patching.py`).
"""

import ast
import time
from pathlib import Path

from gates.python_source import parse_python
from gates.registration.patching import patching_violations
from gates.registration.tree_changes import TreeChange, is_test_file, tree_changes
from gates.target import TargetConfig
from gates.verdict import Verdict

GATE = "scope"


def check(base: Path, candidate: Path, config: TargetConfig) -> Verdict:
    """Judge the candidate's changed paths against the target's path rules."""
    started = time.monotonic()
    changes = tree_changes(base, candidate)
    violations: list[str] = []
    for change in changes:
        violations.extend(_violations(base, candidate, config, change))
    changed = [f"{c.kind} {c.path}" for c in changes]
    details = {"changes": changed, "violations": violations}
    seconds = time.monotonic() - started
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        return Verdict(
            gate=GATE, passed=False, summary=violations[0] + more, details=details, seconds=seconds
        )
    if not changes:
        return Verdict(
            gate=GATE, passed=False, summary="the candidate changed nothing", seconds=seconds
        )
    summary = f"{len(changes)} changed paths, all within {', '.join(config.allowed_paths)}"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def _violations(base: Path, candidate: Path, config: TargetConfig, change: TreeChange):
    path = change.path
    if config.is_protected(path):
        yield f"{path}: protected path {change.kind}; leave it as it is at BASE"
        return
    if not config.is_allowed(path):
        yield f"{path}: outside the allowed paths ({', '.join(config.allowed_paths)})"
        return
    if change.kind == "deleted":
        if is_test_file(path):
            yield f"{path}: an existing test file was deleted"
        return
    file = candidate / path
    if file.is_symlink():
        yield f"{path}: symlinks are not allowed"
        return
    content = file.read_bytes()
    if b"\0" in content or not _is_text(content):
        yield f"{path}: binary files are not allowed"
        return
    if change.kind == "modified" and is_test_file(path):
        yield from _weakened_tests(path, (base / path).read_text(), content.decode())
    if path.endswith(".py") and not is_test_file(path):
        yield from patching_violations(path, content.decode())


def _is_text(content: bytes) -> bool:
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _weakened_tests(path: str, before: str, after: str):
    """Existing test functions must survive unchanged; new ones may be added."""
    try:
        after_tests = _test_functions(parse_python(after))
    except SyntaxError as error:
        yield f"{path}: does not parse ({error.msg}, line {error.lineno})"
        return
    for name, dump in _test_functions(parse_python(before)).items():
        if name not in after_tests:
            yield f"{path}: existing test {name} was removed"
        elif after_tests[name] != dump:
            yield f"{path}: existing test {name} was changed (its assertions must stay as at BASE)"


def _test_functions(module: ast.Module) -> dict[str, str]:
    found: dict[str, str] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                found[prefix + node.name] = ast.dump(node, include_attributes=False)

    visit(module.body, "")
    return found
