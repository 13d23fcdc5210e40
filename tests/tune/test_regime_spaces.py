"""A space declared once applies to each regime of a point kept per regime: every point the
tuner screens changes a setting the kernel reads (a tile of one row regime), never adds a
top-level setting the kernel ignores."""

from pathlib import Path

import pytest

from gates.tuning.launch_settings import declared_settings

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
SOURCE = """
TUNING = {"few": {"a": 1, "b": 2}, "many": {"a": 3, "b": 2, "c": 0}}
TUNING_SPACE = {"a": (1, 2, 3), "b": (2, 4)}
"""


def test_each_neighbour_changes_one_setting_of_one_regime():
    settings = declared_settings(SOURCE)
    incumbent = settings.point
    neighbours = settings.neighbours(incumbent)
    assert len(neighbours) == 6  # few.a (2 values), few.b (1), many.a (2), many.b (1)
    for point in neighbours:
        assert point.keys() == incumbent.keys()
        changed = [
            (regime, name)
            for regime in point
            for name in point[regime]
            if point[regime][name] != incumbent[regime][name]
        ]
        assert len(changed) == 1 and changed[0][1] in ("a", "b")
    # nearest first: one step up the declared list before a step down or a longer jump
    assert neighbours[0] == {"few": {"a": 2, "b": 2}, "many": {"a": 3, "b": 2, "c": 0}}
    assert incumbent == {"few": {"a": 1, "b": 2}, "many": {"a": 3, "b": 2, "c": 0}}


def test_two_settings_may_change_in_two_regimes():
    settings = declared_settings(SOURCE)
    pairs = settings.neighbours(settings.point, 2)
    assert {"few": {"a": 2, "b": 2}, "many": {"a": 2, "b": 2, "c": 0}} in pairs


def _templates():
    for path in sorted(KERNELS.glob("*.py")):
        settings = declared_settings(path.read_text())
        if settings.point is not None and settings.space:
            yield pytest.param(settings, id=path.stem)


@pytest.mark.parametrize("settings", list(_templates()))
def test_every_screened_point_of_a_shipped_kernel_keeps_its_shape_and_changes_it(settings):
    incumbent = settings.point
    neighbours = settings.neighbours(incumbent)
    assert neighbours
    for point in neighbours:
        assert _shape(point) == _shape(incumbent)
        assert point != incumbent


def _shape(point: dict) -> dict:
    return {k: sorted(v) if isinstance(v, dict) else None for k, v in point.items()}
