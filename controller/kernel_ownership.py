"""Where each kernel of an optimize batch's profile applies: the workloads it owns and those it
declines (production runs there), each with its figure, as the profile records them. The
review page and the batch's report.md show the same table."""

from pathlib import Path

from controller.runs.records import read_json


def batch_profile(folder: Path, published: str | None) -> dict:
    """The batch's published profile document, else the first one it staged, else {}."""
    candidates = [Path(published) / "profile.json"] if published else []
    candidates += sorted(folder.glob("profiles/*/*/profile.json"))
    return next((read_json(path) for path in candidates if path.is_file()), None) or {}


def kernel_workloads(document: dict) -> list[tuple[str, str, str]]:
    """(kernel, the workloads it owns, those it declines), each workload with its figure."""

    def listed(figures: dict) -> str:
        return "; ".join(f"{name} {figure}" for name, figure in sorted(figures.items())) or "-"

    return [
        (name, listed(entry.get("owns") or {}), listed(entry.get("declines") or {}))
        for name, entry in sorted((document.get("operators") or {}).items())
    ]
