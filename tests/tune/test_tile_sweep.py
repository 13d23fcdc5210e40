"""benchmarks/tile_sweep.py's choice per regime: the least model time over the regime's
workloads, among tiles timed at every one of them, and the file's TUNING rewritten in place."""

import sys
from pathlib import Path

import operators  # noqa: F401,I001  (selects the Triton interpreter before a kernel module loads)
from gates.tuning.launch_settings import declared_settings, render_point
from operators import REGISTRY
from operators.catalog.checking import first_violation, scaled_down
from operators.declaration import Workload

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import qkv_projection_fused as fused  # noqa: E402
import tile_sweep  # noqa: E402

FAST = {"block_m": 32, "block_n": 32, "block_k": 64, "num_warps": 4, "num_stages": 3}
WIDE = {"block_m": 128, "block_n": 128, "block_k": 64, "num_warps": 8, "num_stages": 3}


def result(workload, regime, calls, tiles_us):
    return {
        "workload": workload,
        "regime": regime,
        "calls_per_forward": calls,
        "tiles_us": tiles_us,
    }


def test_a_regime_takes_the_least_model_time_over_its_workloads():
    fast, wide = tile_sweep.tile_name(FAST), tile_sweep.tile_name(WIDE)
    results = [
        # fast wins the small prefix by 2 us a call, wide the large one by 10: wide, weighted
        result("prefix_b1", "many_rows", 18, {fast: 10.0, wide: 12.0}),
        result("prefix_b8", "many_rows", 18, {fast: 60.0, wide: 50.0}),
        # a tile timed at one workload only is not a candidate for the regime
        result("action_b8", "some_rows", 180, {fast: 9.0}),
    ]
    tuning = tile_sweep.chosen_tuning(fused, results)
    assert tuning["many_rows"] == WIDE
    assert tuning["some_rows"] == FAST
    assert tuning["few_rows"] == fused.TUNING["few_rows"]  # nothing timed: the shipped tile


def test_the_written_tuning_replaces_the_literal_and_nothing_else(tmp_path, monkeypatch):
    copy = tmp_path / "qkv_projection_fused.py"
    original = Path(fused.__file__).read_text()
    copy.write_text(original)
    monkeypatch.setattr(fused, "__file__", str(copy))
    monkeypatch.setattr(tile_sweep.solution_session, "main", lambda argv: 0)
    tuning = {name: dict(WIDE) for name in fused.TUNING}
    tile_sweep.write_tuning("qkv_projection", fused, tuning)
    written = copy.read_text()
    assert declared_settings(written).point == tuning
    before, after = original.split(render_point(fused.TUNING))
    assert written == before + render_point(tuning) + after


def test_every_swept_kernel_is_called_as_its_operator_is():
    # the operator's params come as keywords (qkv_projection's head_dim): a candidate that
    # refused them was refused at every tile on the GPU
    import attention_output_fused
    import gated_down_projection_fused
    import gated_gelu_projection_fused
    import rotate_qk_halves
    import test_attention_output_session
    import test_gated_down_projection_session
    import test_gated_gelu_projection_session
    import test_qkv_projection_session

    batched = Workload(name="b2_t9", axes={"batch": 2, "tokens": 9})
    rows = Workload(name="t18", axes={"tokens": 18})
    cases = {
        "qkv_projection": (
            fused, test_qkv_projection_session.SMALL, fused.INTERPRETER_TILE, batched,
        ),
        "attention_output": (
            attention_output_fused,
            test_attention_output_session.SMALL,
            attention_output_fused.INTERPRETER_TILE,
            batched,
        ),
        "gated_down_projection": (
            gated_down_projection_fused,
            test_gated_down_projection_session.SMALL,
            gated_down_projection_fused.INTERPRETER_TILE,
            test_gated_down_projection_session.workload(2, 9),
        ),
        "gated_gelu_projection": (
            gated_gelu_projection_fused,
            test_gated_gelu_projection_session.DECLARATION,
            test_gated_gelu_projection_session.SMALL_TILES,
            rows,
        ),
        "rotate_qk": (
            rotate_qk_halves,
            scaled_down(REGISTRY.declaration("rotate_qk")),
            {"rows_per_program": 4, "num_warps": 1, "num_stages": 1},
            batched,
        ),
    }  # fmt: skip
    assert set(cases) == set(tile_sweep.SWEPT)
    for operator, (module, declaration, tile, workload) in cases.items():
        kernel = tile_sweep.candidate(operator, module, dict(tile))
        assert first_violation(declaration, kernel, workload, 1, "normal") is None, operator


def test_without_a_gpu_the_sweep_says_so_in_one_line(capsys):
    assert tile_sweep.main(["attention_output"]) == 2
    assert (
        capsys.readouterr().err.strip() == "tile_sweep: needs a CUDA device (it times CUDA graphs)"
    )


def test_an_unknown_workload_is_named_in_one_line(capsys):
    assert tile_sweep.main(["rotate_qk", "--workloads", "prefix_b8,prefix_b9"]) == 2
    assert capsys.readouterr().err.strip() == (
        "tile_sweep: no workload prefix_b9; there are action_b1, prefix_b1, action_b8, prefix_b8"
    )


def test_a_module_that_is_not_there_is_named_with_the_ones_that_are(capsys):
    assert tile_sweep.main(["rotate_qk", "--module", "rotate_qk_quarters"]) == 2
    assert capsys.readouterr().err.strip() == (
        "tile_sweep: --module rotate_qk_quarters: no such module; the kernel modules with "
        "rotate_qk_triton are rotate_qk_halves"
    )


def test_an_incumbent_that_is_no_kernel_module_is_refused_in_one_line(capsys):
    assert tile_sweep.main(["rotate_qk", "--incumbent", "projection_gpu"]) == 2
    assert capsys.readouterr().err.strip() == (
        "tile_sweep: --incumbent projection_gpu: it lacks TUNING, TUNING_SPACE, def regime, "
        "def rotate_qk_triton (a kernel module defines all four)"
    )


def test_a_path_is_not_a_module_name(capsys):
    assert tile_sweep.main(["rotate_qk", "--module", "../operators/catalog/rotate_qk"]) == 2
    assert "no such module" in capsys.readouterr().err
