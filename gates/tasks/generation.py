"""Write task packages: rendered in memory, staged in a temporary folder, then renamed.

`force` replaces only a folder that carries this generator's marker, never one it did not make.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

from gates.errors import GateError
from gates.tasks.package import MARKER_FILE, MARKER_TEXT, identity_document
from gates.tasks.rendering import (
    render_contract,
    render_definition,
    render_evaluation_settings,
    render_workloads,
)
from gates.tasks.solution import BuildSpec, Solution, SourceFile
from gates.tasks.vendoring import vendor_module_of
from operators.declaration import OperatorDeclaration

TARGET_HARDWARE = ["NVIDIA H200", "NVIDIA H100"]


def render_package(declaration: OperatorDeclaration) -> dict[str, bytes]:
    """Every file of one operator's task package, by relative path (identity excluded)."""
    if declaration.preferred is None:
        raise GateError(f"operator {declaration.name!r} has no production kernel to vendor")
    definition = render_definition(declaration)
    entry_file, sources = vendor_module_of(declaration.preferred)
    baseline = Solution(
        name=f"{declaration.name}_baseline",
        definition=declaration.name,
        author="kernel-controller",
        spec=BuildSpec(
            language="triton",
            target_hardware=TARGET_HARDWARE,
            entry_point=f"{entry_file}::{declaration.preferred.__name__}",
            dependencies=["torch", "triton"],
        ),
        sources=[SourceFile(path=path, content=text) for path, text in sources.items()],
        description="the production kernel, vendored verbatim (imports made relative)",
    )
    files = {
        "definition.json": _json_bytes(definition.model_dump(mode="json", exclude_none=True)),
        "workloads.jsonl": "".join(
            trace.model_dump_json(exclude_none=True) + "\n"
            for trace in render_workloads(declaration)
        ).encode(),
        "contract.json": _json_bytes(render_contract(declaration)),
        "evaluation.json": _json_bytes(render_evaluation_settings(declaration)),
        "solution/solution.json": _json_bytes(baseline.model_dump(mode="json", exclude_none=True)),
    }
    for path, text in sources.items():
        files[f"solution/{path}"] = text.encode()
    return files


def write_package(
    declaration: OperatorDeclaration,
    output: Path,
    force: bool = False,
    files: dict[str, bytes] | None = None,
) -> tuple[Path, str]:
    """Write one package to output/<name> (`files` if rendered already, e.g. from a capture);
    returns its folder and identity digest."""
    files = render_package(declaration) if files is None else files
    identity = identity_document(files)
    target = Path(output) / declaration.name
    if target.exists() or target.is_symlink():
        if not force:
            raise GateError(f"{target} exists; pass --force to replace a generated package")
        if target.is_symlink() or not (target / MARKER_FILE).is_file():
            raise GateError(f"{target} was not made by `controller generate`; refusing to replace")
    Path(output).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{declaration.name}-", dir=output))
    try:
        everything = dict(files)
        everything["identity.json"] = _json_bytes(identity)
        everything[MARKER_FILE] = MARKER_TEXT.encode()
        for relative, content in everything.items():
            _write_synced(staging / relative, content)
        staging.chmod(0o755)
        if target.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{declaration.name}-old-", dir=output))
            os.replace(target, retired / "package")
            os.replace(staging, target)
            shutil.rmtree(retired)
        else:
            os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target, identity["digest"]


def _write_synced(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


def _json_bytes(data) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
