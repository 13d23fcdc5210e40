"""Pack a cheat fixture and the shared honest kernel into one solution JSON (no pytest, so
the GPU benchmark can use it too)."""

import json
from pathlib import Path

CHEATS = Path(__file__).resolve().parent / "cheats"
HELPERS = ("device_memory", "host_rms")  # shared by several fixtures, packed where imported


def cheat_solution(name: str, folder: Path, definition: str = "rms_norm") -> Path:
    """Write cheats/<name>.py plus cheats/rms_kernel.py (and the helpers it imports from
    HELPERS) as <folder>/<name>.json."""
    text = (CHEATS / f"{name}.py").read_text()
    sources = [
        {"path": "cheat.py", "content": text},
        {"path": "rms_kernel.py", "content": (CHEATS / "rms_kernel.py").read_text()},
    ]
    for helper in HELPERS:
        if f"from .{helper} import" in text:
            content = (CHEATS / f"{helper}.py").read_text()
            sources.append({"path": f"{helper}.py", "content": content})
    document = {
        "name": f"cheat_{name}",
        "definition": definition,
        "author": "tests",
        "spec": {
            "language": "triton",
            "target_hardware": ["cpu", "NVIDIA H200"],
            "entry_point": "cheat.py::rms_norm",
        },
        "sources": sources,
    }
    path = Path(folder) / f"{name}.json"
    path.write_text(json.dumps(document))
    return path
