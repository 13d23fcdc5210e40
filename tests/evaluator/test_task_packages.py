"""Task packages: schema-valid, deterministic, digest-protected, and `--force` stays in its lane."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gates.errors import GateError
from gates.tasks.definition import Definition
from gates.tasks.generation import write_package
from gates.tasks.package import load_task
from gates.tasks.rendering import reference_source
from gates.tasks.solution import load_solution
from gates.tasks.trace import Trace
from operators import REGISTRY
from operators.catalog.checking import scaled_down

ROOT = Path(__file__).resolve().parents[2]


def controller(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "controller", *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TRITON_INTERPRET": "1"},
        timeout=300,
    )


def test_every_catalog_operator_renders_a_valid_package(task_root):
    for declaration in REGISTRY:
        task = load_task(task_root / declaration.name)
        definition = Definition.model_validate_json((task.folder / "definition.json").read_text())
        assert definition.name == declaration.name
        assert "def run(" in definition.reference
        namespace: dict = {}
        exec(definition.reference, namespace)  # the reference is self-contained
        assert callable(namespace["run"])
        assert [t.workload.uuid for t in task.workloads]
        assert all(isinstance(t, Trace) and t.weight for t in task.workloads)
        assert task.baseline.spec.entry_point.endswith(f"::{declaration.preferred.__name__}")
        identity = json.loads((task.folder / "identity.json").read_text())
        assert identity["digest"] == task.digest


def test_hidden_workloads_are_not_in_the_package(task_root):
    text = (task_root / "rms_norm" / "workloads.jsonl").read_text()
    assert "hidden" not in text
    declared = {w.axes["tokens"] for w in REGISTRY.declaration("rms_norm").workloads}
    written = {json.loads(line)["workload"]["axes"]["tokens"] for line in text.splitlines()}
    assert written == declared


def test_generation_is_deterministic(tmp_path):
    declaration = REGISTRY.declaration("rms_norm")
    _, first = write_package(declaration, tmp_path / "a")
    _, second = write_package(declaration, tmp_path / "b")
    assert first == second


def test_force_replaces_only_its_own_folders(tmp_path):
    declaration = REGISTRY.declaration("rms_norm")
    folder, digest = write_package(declaration, tmp_path)
    with pytest.raises(GateError, match="--force"):
        write_package(declaration, tmp_path)
    assert write_package(declaration, tmp_path, force=True) == (folder, digest)
    foreign = tmp_path / "foreign" / "rms_norm"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(GateError, match="not made by"):
        write_package(declaration, tmp_path / "foreign", force=True)
    assert (foreign / "notes.txt").read_text() == "mine"


def test_a_tampered_package_is_refused(tmp_path):
    folder, _ = write_package(REGISTRY.declaration("rms_norm"), tmp_path)
    contract = folder / "contract.json"
    contract.write_text(contract.read_text().replace('"roundings": 3', '"roundings": 30'))
    with pytest.raises(GateError, match="identity.json"):
        load_task(folder)


def test_solutions_load_from_a_folder_or_a_json_file(task_root, tmp_path):
    folder_solution = load_solution(task_root / "rms_norm" / "solution")
    document = tmp_path / "solution.json"
    document.write_text(folder_solution.model_dump_json())
    assert load_solution(document).digest() == folder_solution.digest()
    with pytest.raises(GateError, match="malformed"):
        document.write_text(json.dumps({"name": "x"}))
        load_solution(document)


def test_vendored_baseline_imports_its_own_copies(task_root):
    sources = load_solution(task_root / "split_kv_attention" / "solution").sources
    paths = {source.path for source in sources}
    assert "operators/catalog/split_kv_attention.py" in paths
    assert "operators/__init__.py" not in paths  # only the modules it imports
    for source in sources:
        assert "\nfrom operators" not in source.content
        assert "\nimport operators" not in source.content


def test_generate_command_lists_writes_and_refuses(tmp_path):
    listed = controller("generate", "--list")
    assert listed.returncode == 0 and "rms_norm" in listed.stdout
    written = controller("generate", "rms_norm", "--output", str(tmp_path))
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "rms_norm" / "identity.json").is_file()
    again = controller("generate", "rms_norm", "--output", str(tmp_path))
    assert again.returncode == 2 and "--force" in again.stderr
    unknown = controller("generate", "no_such_operator", "--output", str(tmp_path))
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1


def test_packages_load_in_flashinfer_bench(task_root):
    """flashinfer-bench 0.1.2 is installed by scripts/setup, so this never skips."""
    import flashinfer_bench.data as data

    for declaration in REGISTRY:
        folder = task_root / declaration.name
        definition = json.loads((folder / "definition.json").read_text())
        data.Definition.model_validate(definition)
        data.Solution.model_validate(
            json.loads((folder / "solution" / "solution.json").read_text())
        )
        for line in (folder / "workloads.jsonl").read_text().splitlines():
            data.Trace.model_validate_json(line)


class _Scale:
    factor = 2.0


def _scaled_reference(x, weight, eps=1e-6):
    return x * _Scale.factor


def test_a_reference_that_reads_a_class_is_not_rendered():
    """A package writes no class: the rendered source would name one it does not define."""
    declaration = REGISTRY.declaration("rms_norm").model_copy(
        update={"reference": _scaled_reference}
    )
    with pytest.raises(GateError, match="'_Scale', which cannot be inlined"):
        reference_source(declaration)


def _made(factor):
    def closed_reference(x, weight, eps=1e-6):
        return x * factor

    return closed_reference


def test_a_reference_that_closes_over_a_value_is_not_rendered():
    declaration = REGISTRY.declaration("rms_norm").model_copy(update={"reference": _made(2.0)})
    with pytest.raises(GateError, match="closes over factor, which cannot be inlined"):
        reference_source(declaration)


def test_every_rendered_reference_computes_what_the_registry_reference_does():
    """The package's reference is what a tuner elsewhere judges against: run standalone on a
    small workload, it gives the registry reference's outputs bit for bit."""
    for declaration in REGISTRY:
        small = scaled_down(declaration)
        namespace: dict = {}
        exec(reference_source(declaration), namespace)
        inputs = small.make_inputs(small.workloads[0], 0)
        rendered = namespace["run"](*inputs, **small.params)
        expected = declaration.reference(*inputs, **small.params)
        for got, want in zip(_outputs(rendered), _outputs(expected), strict=True):
            assert torch.equal(got, want), declaration.name


def _outputs(value):
    return list(value) if isinstance(value, tuple | list) else [value]
