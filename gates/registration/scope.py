"""Gate 1, scope: the candidate commit changes only what a registration may change.

Judged from the commit itself (the same change list the report shows and the branch holds).
Rejects paths that are not valid UTF-8, changes over the size and count limits and binary
files (the rules every flow shares, `gates/changes/limits.py`), paths outside
`allowed_paths`, any change to a protected path (listed, or implicitly: the parity drivers'
modules, expectation files, `pyproject.toml`), tool configuration files (they would change how
ruff or pytest judge), symlinks, an existing test function that was edited or
removed, changed source or tests that patch other modules at run time (`patching.py`), and
operator code (the runtime package's non-test files: the reference, the kernels) that asks
where it runs, a read BASE's file at the same path does not make (the evaluator's
environment-inspection check, `gates/evaluator/detectors/environment_probes.py`).
"""

import ast
import functools
import time
from pathlib import Path

from gates.changes.limits import ChangedFile, file_violation, limit_violations
from gates.evaluator.detectors.environment_probes import source_probes
from gates.python_source import parse_python
from gates.registration.judged_commit import CommitChange, JudgedCommit
from gates.registration.patching import patching_violations
from gates.registration.tree_changes import is_test_file
from gates.target import TargetConfig
from gates.verdict import Verdict, first_of

GATE = "scope"
SYMLINK_MODE = "120000"
TOOL_FILE_NAMES = frozenset(
    {
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "tox.ini",
        "pytest.ini",
        ".pytest.ini",
        "ruff.toml",
        ".ruff.toml",
        "conftest.py",
        ".gitignore",
        ".gitattributes",
        "sitecustomize.py",
        "usercustomize.py",
        "MANIFEST.in",
        ".coveragerc",
        "noxfile.py",
    }
)
"""Files that configure git, the interpreter, ruff or pytest; a registration never needs them."""


def check(base: Path, commit: JudgedCommit, config: TargetConfig, operator: str = "") -> Verdict:
    """Judge the commit's changed paths against the target's path rules and limits."""
    started = time.monotonic()
    changes = commit.changes()
    violations = limit_violations(
        [ChangedFile(path=c.path, size=c.size) for c in changes], config.limits
    )
    for change in changes:
        violations.extend(_violations(base, commit, config, change, operator))
    changed = [f"{c.kind} {c.path}" for c in changes]
    details = {"changes": changed[:500], "changed_paths": len(changed), "violations": violations}
    seconds = time.monotonic() - started
    if violations:
        details["violations"] = violations[:200]
        return Verdict(
            gate=GATE, passed=False, summary=first_of(violations), details=details, seconds=seconds
        )
    if not changes:
        return Verdict(
            gate=GATE, passed=False, summary="the candidate changed nothing", seconds=seconds
        )
    summary = f"{len(changes)} changed paths, all within {', '.join(config.allowed_paths)}"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def is_tool_file(path: str, config: TargetConfig) -> bool:
    """A tool configuration file that the target's config does not allow by name."""
    name = path.rsplit("/", 1)[-1]
    tool = name in TOOL_FILE_NAMES or name.endswith(".pth")
    return tool and path not in config.allowed_tool_files


def _violations(base, commit, config: TargetConfig, change: CommitChange, operator: str):
    path = change.path
    if not change.utf8:
        yield f"{path}: the path is not valid UTF-8; use plain UTF-8 file names"
        return
    if config.is_protected(path):
        yield f"{path}: protected path {change.kind}; leave it as it is at BASE"
        return
    if is_tool_file(path, config):
        yield f"{path}: tool configuration files may not be {change.kind} by a registration"
        return
    if not config.is_allowed(path):
        yield f"{path}: outside the allowed paths ({', '.join(config.allowed_paths)})"
        return
    if change.kind == "deleted":
        if is_test_file(path):
            yield f"{path}: an existing test file was deleted"
        return
    if change.mode == SYMLINK_MODE:
        yield f"{path}: symlinks are not allowed"
        return
    read = functools.cache(lambda: commit.read(path))
    refused = file_violation(ChangedFile(path=path, size=change.size), read, config.limits)
    if refused:
        yield refused
        return
    text = read().decode()
    if change.kind == "modified" and is_test_file(path):
        yield from _weakened_tests(path, (Path(base) / path).read_text(), text)
    if path.endswith(".py"):
        own_module = _operator_module(config, operator) if is_test_file(path) else None
        yield from patching_violations(path, text, own_module)
        if not is_test_file(path) and path.startswith(f"{config.runtime_package}/"):
            yield from _environment_reads(base, path, text, config.runtime_package)


def _environment_reads(base, path: str, text: str, runtime_package: str):
    """An operator that asks where or when it runs (loaded modules, hooks, environment, frames,
    clocks, randomness, a module beyond the kernel's allow-list) can behave one way under the
    gates and another in a deployment; it may import its own runtime package by name."""
    at_base = Path(base) / path
    known = {path: at_base.read_text()} if at_base.is_file() else {}
    for found in source_probes({path: text}, known, own_package=runtime_package):
        yield f"{found}: operator code may not ask where or when it runs"


def _operator_module(config: TargetConfig, operator: str) -> str | None:
    """The module a new operator lives in (`operators.catalog.gelu_tanh`), which its own tests
    may monkeypatch."""
    return f"{config.registry_module}.{operator}" if operator else None


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
