"""Identities a run freezes: the controller's own source and the environment it runs in."""

import hashlib
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("controller", "gates", "sandbox", "operators")
PROMPTS_PACKAGE = "prompts"


def controller_source_digest(root: Path = SOURCE_ROOT) -> str:
    """sha256 over every .py file of the controller's packages and every prompt file.

    A resumed run must be judged by the same code that started it, so any edit changes this.
    """
    files = []
    for package in SOURCE_PACKAGES:
        files.extend(path for path in (root / package).rglob("*.py") if path.is_file())
    prompts = root / PROMPTS_PACKAGE
    if prompts.is_dir():
        files.extend(path for path in prompts.rglob("*") if path.is_file())
    digest = hashlib.sha256()
    for path in sorted(set(files)):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return "sha256:" + digest.hexdigest()


def current_environment() -> dict[str, str]:
    """Python, torch, triton, GPU and driver, as `operators.environment` reports them."""
    from operators.environment import current_environment_identity

    return {key: str(value) for key, value in current_environment_identity().model_dump().items()}
