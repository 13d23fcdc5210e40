"""The model's time before and after from `verify`'s paired timings (`PairedTiming` JSON: per
batch size, each kernel profile's median and its rounds, in ms), wherever a batch kept them."""

import json
from pathlib import Path
from typing import Any

from controller.review_page.page_model import ModelTime, TimeFigure

VERIFY_FILES = ("verify.json", "verify/*.json")


def model_time_from_verify(folder: Path) -> ModelTime | None:
    """Every paired timing found in the folder's verify files, one bar per profile per batch."""
    figures: list[TimeFigure] = []
    sources = []
    for pattern in VERIFY_FILES:
        for path in sorted(folder.glob(pattern)):
            found = _figures(_read(path), path.stem)
            if found:
                figures += found
                sources.append(path.relative_to(folder).as_posix())
    if not figures:
        return None
    return ModelTime(
        title="The model's time before and after",
        unit="ms per forward",
        sentence=(
            "the model's forward timed by verify, profiles paired and interleaved, per batch "
            f"size; bars span the timing rounds (from {', '.join(sources)})"
        ),
        figures=figures,
    )


def _figures(value: Any, source: str) -> list[TimeFigure]:
    figures = []
    for timing in _paired_timings(value):
        for profile, median in timing["median_ms"].items():
            rounds = timing.get("round_ms", {}).get(profile) or [median]
            figures.append(
                TimeFigure(
                    group=f"{source}: batch {timing.get('batch', '?')}",
                    label=profile,
                    median=float(median),
                    low=float(min(rounds)),
                    high=float(max(rounds)),
                )
            )
    return figures


def _paired_timings(value: Any) -> list[dict]:
    """Every object shaped like a `PairedTiming` (median_ms and round_ms), at any depth."""
    if isinstance(value, dict):
        if isinstance(value.get("median_ms"), dict) and isinstance(value.get("round_ms"), dict):
            return [value]
        return [found for item in value.values() for found in _paired_timings(item)]
    if isinstance(value, list):
        return [found for item in value for found in _paired_timings(item)]
    return []


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
