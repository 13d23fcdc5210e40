"""The hand-written rotate_qk candidate that `benchmarks/tune_gpu.sh` submits through a scripted
tune run: its edit still applies to the kernel as it is, and the edited kernel meets the
operator's (bit-exact) contract under the interpreter at scaled-down sizes."""

import importlib.util
import json
import sys
from pathlib import Path

from operators.catalog import rotate_qk
from operators.catalog.checking import first_violation, scaled_down
from operators.declaration import DISTRIBUTIONS

SESSION = Path(__file__).resolve().parents[2] / "benchmarks/sessions/tune_rotate_qk.json"


def test_the_split_halves_kernel_applies_and_meets_the_contract(tmp_path):
    (edit,) = json.loads(SESSION.read_text())["attempts"][0]
    assert edit["path"] == "solution/operators/catalog/rotate_qk.py"
    source = Path(rotate_qk.__file__).read_text()
    assert source.count(edit["old"]) == 1, "the session no longer matches rotate_qk.py"
    path = tmp_path / "rotate_qk_split_halves.py"
    path.write_text(source.replace(edit["old"], edit["new"]))
    spec = importlib.util.spec_from_file_location("rotate_qk_split_halves", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        declaration = scaled_down(rotate_qk.DECLARATION)
        for workload in declaration.workloads:
            for distribution in DISTRIBUTIONS:
                violation = first_violation(
                    declaration, module.rotate_qk_triton, workload, 2, distribution
                )
                assert violation is None, f"{workload.name}, {distribution}: {violation}"
    finally:
        sys.modules.pop(spec.name, None)
