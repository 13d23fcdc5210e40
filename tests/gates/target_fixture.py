"""A tiny registration target: the real `operators` runtime, a two-site vision model, its parity
drivers and tests, and the edits a good `gelu_tanh` registration makes."""

import shutil
import subprocess
from pathlib import Path

from gates.registration.call_sites import CallSite
from gates.registration.suite import RegistrationRequest

REPO = Path(__file__).resolve().parents[2]

PYPROJECT = """\
[project]
name = "fixture-target"
version = "0"

[tool.ruff]
line-length = 100

[tool.ruff.lint]
select = ["E", "F", "W", "I"]

[tool.controller]
registry_module = "operators.catalog"
test_command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
parity_configurations = ["model.parity:tiny_batch1", "model.parity:tiny_batch2"]
allowed_paths = ["operators/catalog/", "model/", "tests/"]
protected_paths = ["tests/conftest.py"]

[tool.controller.hidden_parity]
driver = "model.parity:tiny"
batch_sizes = [1, 6]
"""

CATALOG_BASE = '''\
"""Operators of the fixture target, registered on import."""

from operators import triton_runtime  # noqa: F401,I001
from operators.catalog import rms_norm
from operators.registry import REGISTRY

CATALOG = (rms_norm.DECLARATION,)

for _declaration in CATALOG:
    if _declaration.name not in REGISTRY:
        REGISTRY.register(_declaration)
'''

VISION = '''\
"""A two-block vision tower whose activations are the registration's call sites."""

import torch
import torch.nn.functional as F


class VisionBlock:
    """One block: a sum of three streams, a projection, a tanh-approximated GELU."""

    def __init__(self, generator: torch.Generator, width: int = 8) -> None:
        self.weight = torch.randn(width, width, generator=generator) / width**0.5

    def forward(self, x, skip, bias):
        h = x + skip + bias
        return F.gelu(h @ self.weight, approximate="tanh")


class VisionProjector:
    """Projects the block's output with a second activation."""

    def forward(self, x):
        return F.gelu(x, approximate="tanh") * 0.5
'''

PARITY = '''\
"""Parity drivers: fixed seeds, named outputs."""

import torch

from model.vision import VisionBlock, VisionProjector


def run(batch: int, seed: int = 7) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    block, projector = VisionBlock(generator), VisionProjector()
    x, skip, bias = (torch.randn(batch, 8, generator=generator) for _ in range(3))
    hidden = block.forward(x, skip, bias)
    return {"hidden": hidden, "projected": projector.forward(hidden)}


def tiny_batch1() -> dict[str, torch.Tensor]:
    return run(1)


def tiny_batch2() -> dict[str, torch.Tensor]:
    return run(2)


def tiny(batch: int, seed: int) -> dict[str, torch.Tensor]:
    return run(batch, seed)
'''

MODEL_TEST = """\
from model.parity import run


def test_outputs_are_finite():
    outputs = run(2)
    assert outputs["hidden"].isfinite().all()
    assert outputs["projected"].shape == (2, 8)
"""

GELU_TANH = '''\
"""GELU with the tanh approximation, as in the vision tower's MLP."""

import torch
import torch.nn.functional as F

from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec, Workload


def gelu_tanh_reference(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), eager PyTorch."""
    return F.gelu(x, approximate="tanh")


DECLARATION = OperatorDeclaration(
    name="gelu_tanh",
    summary="Elementwise GELU, tanh approximation.",
    axes=(Axis(name="rows", kind="var"), Axis(name="width", kind="const", value=8)),
    inputs=(TensorSpec(name="x", shape=("rows", "width"), dtype="float32"),),
    outputs=(TensorSpec(name="y", shape=("rows", "width"), dtype="float32"),),
    reference=gelu_tanh_reference,
    contract=Contract(mode="bit_exact", reason="the reference is the production path"),
    workloads=(Workload(name="rows_2", axes={"rows": 2}),),
)
'''

CATALOG_GOOD = CATALOG_BASE.replace(
    "from operators.catalog import rms_norm", "from operators.catalog import gelu_tanh, rms_norm"
).replace("(rms_norm.DECLARATION,)", "(rms_norm.DECLARATION, gelu_tanh.DECLARATION)")

GELU_TEST = """\
import math

import torch

from operators import REGISTRY


def test_reference_matches_the_formula():
    x = torch.linspace(-4, 4, 101, dtype=torch.float64)
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    expected = 0.5 * x * (1 + torch.tanh(inner))
    got = REGISTRY.declaration("gelu_tanh").reference(x)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-12)
"""

ROUTED_BLOCK = """        return ops.gelu_tanh(h @ self.weight)"""
ROUTED_PROJECTOR = """        return ops.gelu_tanh(x) * 0.5"""
IMPORTS = "import torch\nimport torch.nn.functional as F\n"
IMPORTS_ROUTED = "import torch\n\nfrom operators import ops\n"


def vision(block: bool = True, projector: bool = True, keep_f: bool = False) -> str:
    """The vision module with either or both call sites routed through the registry."""
    text = VISION
    if block:
        text = text.replace(
            '        return F.gelu(h @ self.weight, approximate="tanh")', ROUTED_BLOCK
        )
    if projector:
        text = text.replace('        return F.gelu(x, approximate="tanh") * 0.5', ROUTED_PROJECTOR)
    if block and projector and not keep_f:
        return text.replace(IMPORTS, IMPORTS_ROUTED)
    return text.replace(IMPORTS, IMPORTS + "\nfrom operators import ops\n")


GOOD_EDITS = {
    "operators/catalog/gelu_tanh.py": GELU_TANH,
    "operators/catalog/__init__.py": CATALOG_GOOD,
    "model/vision.py": vision(),
    "tests/test_gelu_tanh.py": GELU_TEST,
}
SITES = (
    CallSite(path="model/vision.py", qualname="VisionBlock.forward"),
    CallSite(path="model/vision.py", qualname="VisionProjector.forward"),
)
REQUEST = RegistrationRequest(operator="gelu_tanh", call_sites=SITES)


def write_target(root: Path) -> Path:
    """The fixture target's BASE tree (a git repository with one commit)."""
    root.mkdir(parents=True, exist_ok=True)
    runtime = root / "operators"
    shutil.copytree(REPO / "operators", runtime, ignore=shutil.ignore_patterns("__pycache__"))
    (runtime / "catalog" / "gelu_tanh.py").unlink(missing_ok=True)
    files = {
        "pyproject.toml": PYPROJECT,
        "operators/catalog/__init__.py": CATALOG_BASE,
        "model/__init__.py": '"""Fixture model."""\n',
        "model/vision.py": VISION,
        "model/parity.py": PARITY,
        "tests/conftest.py": "",
        "tests/test_model.py": MODEL_TEST,
    }
    apply_edits(root, files)
    git = ["git", "-C", str(root), "-c", "user.name=fixture", "-c", "user.email=fixture@localhost"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "fixture target"], check=True)
    return root


def apply_edits(root: Path, edits: dict[str, str | None]) -> None:
    """Write (or, for None, delete) each path under root."""
    for path, content in edits.items():
        file = root / path
        if content is None:
            file.unlink(missing_ok=True)
            continue
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(content)


def seeded_runner(cache: Path):
    """The Landlock runner where this machine can enforce it (else unfenced), with a private
    bytecode cache filled once, as a run's preparation fills it from BASE."""
    from gates.registration.commands import UnfencedRunner
    from gates.registration.runners import make_runner
    from sandbox.errors import FenceError

    try:
        runner = make_runner("landlock", pycache_prefix=cache)
    except FenceError:
        runner = UnfencedRunner(pycache_prefix=cache)
    imports = "import torch, triton, pytest, operators.catalog"
    runner.run(["python", "-c", imports], REPO, seed_bytecode=True, timeout=300)
    return runner
