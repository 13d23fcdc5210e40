"""Every catalog kernel's declared launch-settings space is valid: each value of each setting,
taken one at a time from the production point (the points autotune tries first), meets the
operator's contract under the Triton interpreter at a scaled-down workload.

The launchers take their compiled-GPU layout here (the interpreter's own row and block choices
are switched off), so the blocks, rows per program and query/key tiles of each point are what
runs. Warps and stages are left out: the interpreter accepts and ignores them, so a point that
only changes those runs exactly the production layout.
"""

import importlib
import types

import pytest

from gates.tuning.launch_settings import declared_settings
from operators.catalog import CATALOG, blocking
from operators.catalog.checking import first_violation, scaled_down
from operators.declaration import Workload

IGNORED_BY_THE_INTERPRETER = ("num_warps", "num_stages")


def _points():
    for declaration in CATALOG:
        module = importlib.import_module(declaration.preferred.__module__)
        if not hasattr(module, "TUNING"):  # no settings to tune (e.g. a registered torch op)
            continue
        with open(module.__file__) as handle:
            settings = declared_settings(handle.read())
        assert settings.point == module.TUNING and settings.space, declaration.name
        for point in [settings.point, *settings.neighbours(settings.point)]:
            changed = {k: v for k, v in point.items() if v != module.TUNING[k]}
            if any(name.startswith(IGNORED_BY_THE_INTERPRETER) for name in changed):
                continue
            label = ",".join(f"{k}={v}" for k, v in changed.items()) or "production"
            yield pytest.param(declaration, module, point, id=f"{declaration.name}-{label}")


COMPILED = types.SimpleNamespace(interpreting=lambda: False)
"""Stands in for `operators.triton_runtime` where a launcher picks its layout, and only there:
the launch itself still runs interpreted."""


def _compiled_layout(monkeypatch, module) -> None:
    """Blocks and rows chosen as on a GPU while the kernels still run interpreted."""
    monkeypatch.setattr(blocking, "triton_runtime", COMPILED)
    if module.__name__.endswith("rotate_qk"):  # one program per row block of q, then of k
        monkeypatch.setattr(module, "triton_runtime", COMPILED)
    if hasattr(module, "_blocks"):  # attention: only its tiling, not its interpreter upcast
        original = module._blocks

        def compiled_blocks(*arguments):
            with monkeypatch.context() as patch:
                patch.setattr(module, "triton_runtime", COMPILED)
                return original(*arguments)

        monkeypatch.setattr(module, "_blocks", compiled_blocks)


@pytest.mark.parametrize(("declaration", "module", "point"), list(_points()))
def test_every_declared_point_meets_the_contract(monkeypatch, declaration, module, point):
    for name, value in point.items():
        monkeypatch.setitem(module.TUNING, name, value)
    _compiled_layout(monkeypatch, module)
    if "rows_per_program" in point:  # the point's layout is the one that runs
        assert (
            blocking.rows_per_program(7, 128, point["rows_per_program"])
            == point["rows_per_program"]
        )
    small = scaled_down(declaration)
    workload = small.workloads[0]  # attention: a prefix of three key blocks of 16, odd queries
    if declaration.name != "split_kv_attention":  # rows: a partial last block of rows
        axes = {axis.name: 3 for axis in small.axes if axis.kind == "var"}
        workload = Workload(name="three_rows_each", axes=axes)
    violation = first_violation(small, declaration.preferred, workload, seed=1)
    assert violation is None, f"{workload.name}: {violation.describe()}"
