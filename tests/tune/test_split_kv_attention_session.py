"""The grouped, split-KV attention kernel that `benchmarks/sessions/tune_split_kv_attention.json`
submits: the session carries the kernel package's parts joined into one operator file as they
are, that file (what ships) and the package (what the benchmark runs) meet the operator's
contract under the interpreter at scaled-down sizes (key split and merge included), the gates
read the launch settings from it, and the H200 benchmark script runs end to end on the CPU."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from gates.tuning.launch_settings import declared_settings
from operators.catalog import split_kv_attention
from operators.catalog.checking import first_violation, scaled_down
from operators.declaration import DISTRIBUTIONS

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import attention_gpu  # noqa: E402
import attention_session  # noqa: E402
import split_kv_attention_flash as flash  # noqa: E402

SPLIT_EVERYWHERE = {**flash.INTERPRETED, "keys": 32, "programs": 64, "merge_rows": 8}
"""Small blocks and many programs: every scaled-down workload's keys are split, then merged."""


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """The operator file the session ships, imported with the repository's absolute imports."""
    path = tmp_path_factory.mktemp("shipped") / "shipped_split_kv_attention.py"
    path.write_text(attention_session.operator_file_source())
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[path.stem]


def test_the_session_writes_the_joined_parts_over_the_operator_file():
    (write,) = json.loads(attention_session.SESSION_FILE.read_text())["attempts"][0]
    assert write["tool"] == "write"
    assert write["path"] == "solution/operators/catalog/split_kv_attention.py"
    assert write["content"] == attention_session.solution_source(
        attention_session.operator_file_source()
    ), "stale session: run python benchmarks/attention_session.py"
    assert "from ...operators.catalog.rounding import round_to_bfloat16" in write["content"]
    assert "from ." + "kernels" not in write["content"]  # the parts' own imports are dropped
    settings = declared_settings(write["content"])  # what autotune and the evidence read
    assert settings.point == flash.TUNING
    assert settings.space == {name: tuple(values) for name, values in flash.TUNING_SPACE.items()}


@pytest.mark.parametrize(
    ("source", "settings"),
    [("shipped", None), ("shipped", SPLIT_EVERYWHERE), ("package", None)],
    ids=["shipped-default", "shipped-split", "package-default"],
)
def test_the_kernel_meets_the_contract_on_every_distribution(source, settings, request):
    """The shipped file under both settings; the package, whose code it is, at its default."""
    module = request.getfixturevalue("shipped") if source == "shipped" else flash
    declaration = scaled_down(split_kv_attention.DECLARATION)
    kernel = module.split_kv_attention_triton
    if settings is not None:

        def kernel(q, k_cache, v_cache, k, v, scale):
            return module.attend(q, k_cache, v_cache, k, v, scale, settings)

    for workload in declaration.workloads:
        for distribution in DISTRIBUTIONS:
            violation = first_violation(declaration, kernel, workload, 3, distribution)
            assert violation is None, f"{workload.name}, {distribution}: {violation}"


def test_the_split_settings_split_every_scaled_down_workload():
    declaration = scaled_down(split_kv_attention.DECLARATION)
    for workload in declaration.workloads:
        axes = declaration.axis_sizes(workload)
        plan = flash.Plan(
            SPLIT_EVERYWHERE,
            axes["batch"],
            axes["kv_heads"],
            axes["query_heads"] // axes["kv_heads"] * axes["tokens"],
            axes["prefix"] + axes["tokens"],
        )
        assert plan.splits > 1, workload.name


@pytest.mark.slow  # about 4 s on an idle core: nine interpreted contract checks and timings
def test_the_benchmark_runs_on_the_cpu_and_writes_its_report(tmp_path, capsys):
    assert attention_gpu.main(["--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    assert "| workload | production us | new us |" in capsys.readouterr().out
    report = json.loads((tmp_path / "attention_gpu.json").read_text())
    assert report["session_current"] is True
    assert [result["contract"] for result in report["results"]] == ["ok"] * 3
    roles = {timing["role"] for timing in report["results"][0]["timings"]}
    assert {"production", "new", "sdpa", "variant0"} <= roles


def test_the_benchmark_refuses_full_sizes_under_the_interpreter(capsys):
    assert attention_gpu.main(["--device", "cpu"]) == 2
    assert "--quick" in capsys.readouterr().err


def test_the_default_launch_settings_compile_for_the_h200_without_spilling():
    """Spills made the first H200 figures of this kernel slow: an offline sm_90a compile of
    the shipped settings (no GPU needed; its own process, where the kernels are compiled
    rather than interpreted) keeps every value in registers."""
    import subprocess

    names = ("rows", "keys", "num_warps", "num_stages")
    settings = ",".join(
        "x".join(str(flash.TUNING[f"{name}{suffix}"]) for name in names) for suffix in ("", "_long")
    )
    script = BENCHMARKS / "flash_registers.py"
    result = subprocess.run(
        [sys.executable, str(script), "--settings", settings, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    for rows, keys, warps, stages, used, spilled in json.loads(result.stdout):
        assert spilled == 0 and 0 < used <= 255, (rows, keys, warps, stages, used, spilled)
