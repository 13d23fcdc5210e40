"""The tracer tells library frames (torch, Triton) from the candidate's by their code's file
names: under a virtual environment reached through a symbolic link (a checkout whose `.venv`
links to another checkout's), those names carry the linked path, not the resolved one, and
Triton's interpreter launches must still be seen as Triton's (else its `set_` on a launch's
arguments reads as the candidate's own ATen compute)."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHECK = textwrap.dedent(
    """
    import torch._ops
    import triton.runtime.interpreter as interpreter
    from gates.evaluator.tracing import LIBRARY_ROOTS, TRITON_ROOTS, triton_code

    codes = triton_code(("triton.runtime.interpreter",))  # dataclass methods come from <string>
    launch = next(code for code in codes if code.co_filename.endswith("interpreter.py"))
    print("triton", launch.co_filename.startswith(TRITON_ROOTS))
    print("torch", torch._ops.OpOverload.__call__.__code__.co_filename.startswith(LIBRARY_ROOTS))
    print("linked", interpreter.__file__.startswith(sys.argv[1]))
    """
)


def test_library_frames_are_known_under_a_linked_virtual_environment(tmp_path):
    if sys.prefix == sys.base_prefix:
        pytest.skip("not running in a virtual environment")
    linked = tmp_path / "venv"
    linked.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    python = linked / "bin" / Path(sys.executable).name
    result = subprocess.run(
        [str(python), "-c", "import sys\n" + CHECK, str(linked)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert "linked True" in lines, result.stdout  # the premise: files named by the link
    assert "triton True" in lines and "torch True" in lines, result.stdout
