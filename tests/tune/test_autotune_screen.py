"""The screen of a declared space (`controller.screening`): every point visited under the
Triton interpreter on a tiny kernel, failing points dropped with their reasons, the rest
ranked by a timing injected at the timer's boundary; the graph timer's plan on a stand-in
device; the worker's command line on the CPU (contract only, no timing)."""

import io
import json
import subprocess
import sys
import textwrap
import time
import types

import pytest

from controller.screening.report import ScreenedPoint, ScreenReport, space_points
from controller.screening.screen import ContractCheck, screen_points
from controller.screening.timer import GraphTimer
from gates.tasks.solution import BuildSpec, Solution, SourceFile
from gates.tuning.launch_settings import DeclaredSettings, declared_settings
from operators import REGISTRY
from operators.catalog.checking import scaled_down

KERNEL = textwrap.dedent(
    '''
    """RMSNorm with the row split in column blocks of BLOCK: too small a block drops columns."""

    import torch
    import triton
    import triton.language as tl

    from operators import triton_runtime  # noqa: F401
    from operators.catalog.rounding import round_to_bfloat16

    TUNING = {"block": 128, "num_warps": 4}
    TUNING_SPACE = {"block": (64, 96, 128, 256), "num_warps": (1, 4)}


    @triton.jit
    def _kernel(x_ptr, w_ptr, out_ptr, hidden, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        columns = tl.arange(0, BLOCK)
        mask = columns < hidden
        x = tl.load(x_ptr + row * hidden + columns, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + columns, mask=mask, other=0.0).to(tl.float32)
        inverse = tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps)
        y = round_to_bfloat16(x * inverse * w)  # to nearest, as a GPU converts
        tl.store(out_ptr + row * hidden + columns, y.to(tl.bfloat16), mask=mask)


    def tiny_norm(x, weight, eps=1e-6):
        out = torch.zeros_like(x)
        hidden = x.shape[-1]
        _kernel[(x.numel() // hidden,)](x, weight, out, hidden, eps, BLOCK=TUNING["block"],
                                        num_warps=TUNING["num_warps"])
        return out
    '''
)


def _solution() -> Solution:
    return Solution(
        name="tiny_norm",
        definition="rms_norm",
        author="tests",
        spec=BuildSpec(
            language="triton", target_hardware=["cpu"], entry_point="tiny_norm.py::tiny_norm"
        ),
        sources=[SourceFile(path="tiny_norm.py", content=KERNEL)],
    )


class PointTimes:
    """Timing injected at the timer's boundary: a point's time from its own TUNING."""

    weights = {"action_b1": 10.0, "prefix_b1": 1.0}

    def __init__(self):
        self.timed = []

    def time(self, function):
        tuning = sys.modules[function.__module__].TUNING
        self.timed.append(dict(tuning))
        base = 1.0 + 64.0 / tuning["block"] + 0.1 * tuning["num_warps"]
        return {"action_b1": base, "prefix_b1": 4 * base}


def test_a_space_too_large_to_list_is_screened_nearest_first_up_to_the_limit():
    """Seven regimes of four settings (shaped like the split-dim attention kernel's four of
    seven) multiply out to about 10^13 points; the list stops at the limit, incumbent first,
    one changed setting before two."""
    names = {"queries": (16, 32, 64), "keys": (16, 32, 64), "warps": (4, 8), "stages": (2, 3)}
    space = {f"{r}_{n}": v for r in ("a", "b", "c", "d", "e", "f", "g") for n, v in names.items()}
    point = {name: values[0] for name, values in space.items()}
    settings = DeclaredSettings(point=point, space=space)
    started = time.monotonic()
    points = space_points(settings, limit=500)
    assert time.monotonic() - started < 10
    assert len(points) == 500 and points[0] == point
    changed = [sum(p[n] != point[n] for n in point) for p in points]
    one_step = sum(len(values) - 1 for values in space.values())
    assert changed[1 : 1 + one_step] == [1] * one_step and changed == sorted(changed)


def test_the_screen_visits_every_point_drops_failures_with_reasons_and_ranks_the_rest():
    settings = declared_settings(KERNEL)
    points = space_points(settings)
    assert len(points) == 8 and points[0] == settings.point  # every point, incumbent first
    small = scaled_down(REGISTRY.declaration("rms_norm"))  # hidden 96
    check = ContractCheck(small, small.workloads[-1:], "cpu")
    timer, out = PointTimes(), io.StringIO()
    reached = screen_points(
        _solution(), list(enumerate(points)), check, timer, out, time.monotonic() + 60
    )
    records = [ScreenedPoint.model_validate_json(line) for line in out.getvalue().splitlines()]
    assert reached == 8 and [r.index for r in records] == list(range(8))
    by_block = {}
    for record in records:
        by_block.setdefault(record.point["block"], set()).add(record.status)
        assert record.screen_s > 0
    assert by_block[64] == {"contract_failed"}  # columns 64..95 never written
    assert by_block[96] == {"compile_error"}  # tl.arange needs a power of two
    reasons = {r.point["block"]: r.reason for r in records if not r.passed}
    assert "power of 2" in reasons[96]
    assert reasons[64].startswith("tokens13: output 'y'") and "exceeds the bound" in reasons[64]
    assert {tuple(sorted(t.items())) for t in map(dict, timer.timed)} == {
        (("block", b), ("num_warps", w)) for b in (128, 256) for w in (1, 4)
    }  # only passing points are timed
    report = ScreenReport(device="cuda", timed=True, points=records)
    best = report.ranked()[0]
    assert best.point == {"block": 256, "num_warps": 1}
    assert best.weighted_us == pytest.approx(10 * 1.35 + 4 * 1.35)


def test_a_screen_stops_at_its_deadline_and_says_how_far_it_got():
    settings = declared_settings(KERNEL)
    small = scaled_down(REGISTRY.declaration("rms_norm"))
    check = ContractCheck(small, small.workloads[-1:], "cpu")
    ticks = iter(range(100))
    out = io.StringIO()
    reached = screen_points(
        _solution(), list(enumerate(space_points(settings))), check, None, out, 4,
        clock=lambda: next(ticks),
    )  # fmt: skip
    assert reached == 2  # two clock reads per point: the deadline falls after the second
    statuses = [json.loads(line)["status"] for line in out.getvalue().splitlines()]
    assert statuses == ["checked", "checked"]  # no timer: the contract only


def test_a_screen_does_not_start_a_point_that_would_end_past_its_deadline():
    settings = declared_settings(KERNEL)
    small = scaled_down(REGISTRY.declaration("rms_norm"))
    check = ContractCheck(small, small.workloads[-1:], "cpu")
    ticks = iter([0.0, 3.0, 3.5, 6.0, 7.0, 8.0])  # the first point takes 3 s
    out = io.StringIO()
    reached = screen_points(
        _solution(), list(enumerate(space_points(settings))), check, None, out, 6.4,
        clock=lambda: next(ticks),
    )  # fmt: skip
    assert reached == 1  # at 3.5 s a second 3 s point would end at 6.5, past the deadline
    assert json.loads(out.getvalue())["screen_s"] == 3.0


def test_the_timing_pass_takes_only_the_points_the_compiling_children_got_through(tmp_path):
    from controller.screening.worker import _indices, compiled_first

    points = [(index, {"block": block}) for index, block in enumerate((64, 96, 128, 256))]
    listed = tmp_path / "compiled.txt"
    listed.write_text("2\n0\n")  # two children, each through one point
    assert compiled_first(points, _indices(listed)) == [points[0], points[2]]
    # none got through (a budget too short to compile one): every point, compiled as timed
    assert compiled_first(points, _indices(tmp_path / "absent.txt")) == points


class StandInGraphs:
    """Graph timing's device interface on the CPU: a call of `slow` takes 3 us, any other
    2 us, and every replay runs 1% slower than the one before (a drifting clock)."""

    def __init__(self, slow=None):
        self.slow, self.captured, self.replays = slow, [], 0

    def warm_up(self, function, inputs, params):
        function(*inputs, **params)

    def capture(self, function, input_sets, params):
        self.captured.append(len(input_sets))
        return (function is self.slow, len(input_sets)), []

    def timed_replay(self, graph, calls, drained):
        self.replays += 1
        return graph, self.replays

    def milliseconds(self, events):
        (slow, calls), replay = events
        return (0.003 if slow else 0.002) * calls * 1.01**replay

    def synchronize(self):
        pass


def test_the_graph_timer_follows_the_evaluators_figure_per_workload():
    declaration = scaled_down(REGISTRY.declaration("rms_norm"))
    device = StandInGraphs()
    one_set = 13 * 96 * 2 * 2 + 96 * 2  # x and y of tokens13, and the weight
    timer = GraphTimer(declaration, None, l2_bytes=one_set * 4, tensor_device="cpu", device=device)
    assert set(timer.figures.values()) == {"warm"}
    times = timer.time(lambda x, weight, eps: x)
    assert set(times) == {w.name for w in declaration.workloads}
    assert device.captured == [20] * len(declaration.workloads)  # warm: 20 calls rotating
    assert all(plan.replays * 20 >= 200 for plan in timer.plans)  # a few hundred calls
    cold = GraphTimer(declaration, None, l2_bytes=200, tensor_device="cpu", device=device)
    assert set(cold.figures.values()) == {"cold"}  # not even one row's set fits
    assert all(plan.replays >= 3 and len(plan.sets) >= 20 for plan in cold.plans)


def test_paired_with_production_a_drifting_clock_moves_no_point():
    declaration = scaled_down(REGISTRY.declaration("rms_norm"))

    def production(x, weight, eps):
        return x

    def point(x, weight, eps):
        return x

    device = StandInGraphs(slow=point)
    unpaired = GraphTimer(declaration, "warm", 1 << 30, "cpu", device=device)
    for _ in range(5):  # the clock drifts while other points are screened
        drifted = unpaired.time(point)
    assert all(value > 3.3 for value in drifted.values())  # 3 us read as more
    device = StandInGraphs(slow=point)
    paired = GraphTimer(declaration, "warm", 1 << 30, "cpu", device=device, production=production)
    for _ in range(5):
        times = paired.time(point)
    for plan in paired.plans:  # 1.5 x production's time as measured at the start
        assert times[plan.name] == pytest.approx(1.5 * plan.production_us, rel=0.002)


def _worker(tmp_path, device: str, count: int, *extra: str) -> list[ScreenedPoint]:
    """The worker's command line on rms_norm's first `count` points."""
    from gates.tasks.generation import write_package

    task, _ = write_package(REGISTRY.declaration("rms_norm"), tmp_path)
    settings = declared_settings(
        (task / "solution" / "operators" / "catalog" / "rms_norm.py").read_text()
    )
    points = space_points(settings)[:count]
    listed = tmp_path / "points.json"
    listed.write_text(json.dumps(list(enumerate(points))))
    out = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "controller.screening.worker", str(task)]
    command += [str(task / "solution"), str(listed), str(out), "--device", device, *extra]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    records = [ScreenedPoint.model_validate_json(line) for line in out.read_text().splitlines()]
    assert [r.point for r in records] == points
    return records


@pytest.mark.slow  # a fresh interpreter importing torch: about 3 s, more on a loaded machine
def test_the_worker_screens_on_the_cpu_without_timing(tmp_path):
    records = _worker(tmp_path, "cpu", 3)
    assert {r.status for r in records} == {"checked"} and all(
        r.weighted_us is None for r in records
    )


@pytest.mark.gpu
def test_on_cuda_the_worker_compiles_ahead_and_times_every_point(tmp_path):
    records = _worker(tmp_path, "cuda", 6, "--jobs", "2")
    assert {r.status for r in records} == {"timed"}, [r.reason for r in records]
    workloads = {w.name for w in REGISTRY.declaration("rms_norm").workloads}
    assert all(set(r.workload_us) == workloads and r.weighted_us > 0 for r in records)
    assert max(r.screen_s for r in records[1:]) < 5  # compiled ahead: seconds per point or less


class DeviceLostOnce:
    """A fence whose worker screens one point per run; the first run's point breaks the device
    context (exit 4), the second run ends normally."""

    def __init__(self):
        self.runs = []

    def run(self, argv, policy, cwd, stdin=None):
        listed, out = json.loads((cwd / argv[5]).read_text()), cwd / argv[6]
        self.runs.append([index for index, _ in listed])
        index, point = listed[0]
        lost = len(self.runs) == 1
        fields = {"status": "runtime_error", "reason": "illegal memory access"} if lost else {
            "status": "timed", "weighted_us": 2.0, "workload_us": {"action_b1": 0.2}}  # fmt: skip
        with out.open("a") as handle:
            handle.write(ScreenedPoint(index=index, point=point, **fields).model_dump_json())
            handle.write("\n")
        stderr = '{"figures": {"action_b1": "warm"}}\n'
        return types.SimpleNamespace(returncode=4 if lost else 0, stderr=stderr, stdout="")


def test_the_fenced_screen_goes_on_past_a_lost_device_and_names_every_point(tmp_path):
    from controller.agents.autotune_screen import SCREEN_FOLDER, screen_in_fence
    from controller.agents.base import AgentSession
    from sandbox.policy import FencePolicy

    fence = DeviceLostOnce()
    policy = FencePolicy(workspace=tmp_path, gpu=True)
    session = AgentSession(workspace=tmp_path, prompt="", fence=fence, policy=policy)
    points = space_points(declared_settings(KERNEL))
    report = screen_in_fence(session, points, budget_s=60, jobs=2)
    assert fence.runs == [list(range(8)), list(range(1, 8))]  # restarted after the lost point
    assert [p.status for p in report.points] == ["runtime_error", "timed"] + ["not_screened"] * 6
    assert all("not reached" in p.reason for p in report.points[2:])
    assert report.timed and report.figures == {"action_b1": "warm"}
    assert "device context failed" in report.note
    assert not (tmp_path / SCREEN_FOLDER).exists()  # nothing of the screen is left to commit


class ListsPoints:
    """A fence whose worker records which points it was handed and screens none of them."""

    def __init__(self):
        self.listed = []

    def run(self, argv, policy, cwd, stdin=None):
        self.listed.append([index for index, _ in json.loads((cwd / argv[5]).read_text())])
        return types.SimpleNamespace(returncode=0, stderr="", stdout="")


def test_a_short_cuda_screen_hands_its_worker_only_the_nearest_points_it_can_reach(tmp_path):
    """240 points in 35 s once left the timing process no time at all; the screen now lists
    the nearest points its budget reaches, and names the others as beyond it."""
    from controller.agents.autotune_screen import screen_in_fence, screenable
    from controller.agents.base import AgentSession
    from sandbox.policy import FencePolicy

    assert screenable(35.0, 14) == 45 and screenable(5.0, 14) == 14
    fence = ListsPoints()
    policy = FencePolicy(workspace=tmp_path, gpu=True)
    session = AgentSession(workspace=tmp_path, prompt="", fence=fence, policy=policy)
    points = space_points(declared_settings(KERNEL))  # 8 points
    report = screen_in_fence(session, points, budget_s=3, jobs=5)
    assert fence.listed == [[0, 1, 2, 3, 4]]
    assert [p.status for p in report.points] == ["not_screened"] * 8
    assert all("not reached" in p.reason for p in report.points[:5])
    assert all("beyond the 5 nearest points" in p.reason for p in report.points[5:])
    on_cpu = AgentSession(
        workspace=tmp_path, prompt="", fence=fence, policy=FencePolicy(workspace=tmp_path)
    )
    screen_in_fence(on_cpu, points, budget_s=3, jobs=5)
    assert fence.listed[-1] == list(range(8)), "the interpreter's screen is not capped"
