"""What a Python process of this repository needs inside the Landlock fence: its import path,
no bytecode written into the tree, a Triton cache it may write, and the Triton interpreter
when it runs on the CPU. Shared by the evaluator's fenced candidate and the fenced `verify`."""

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from gates.evaluator.launcher import REPOSITORY_ROOT


class FencedPython(BaseModel):
    """The environment to set inside, the Triton cache to allow writes to, the paths to read."""

    model_config = ConfigDict(frozen=True)

    environment: dict[str, str]
    triton_cache: Path
    readable: frozenset[Path]


def fenced_python(device: str) -> FencedPython:
    """The fenced process's environment for `device` ("cuda" or "cpu"); creates the cache."""
    triton_cache = Path(os.environ.get("TRITON_CACHE_DIR", Path.home() / ".triton" / "cache"))
    triton_cache.mkdir(parents=True, exist_ok=True)
    python_path = [str(REPOSITORY_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    environment = {
        "PYTHONPATH": os.pathsep.join(python_path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TRITON_CACHE_DIR": str(triton_cache),
    }
    if device == "cpu":
        environment["TRITON_INTERPRET"] = "1"
    readable = {REPOSITORY_ROOT}
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            readable.add(Path(entry))
    return FencedPython(
        environment=environment,
        triton_cache=triton_cache,
        readable=frozenset(path.resolve() for path in readable),
    )
