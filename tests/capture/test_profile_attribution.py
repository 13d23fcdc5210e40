"""The profile's pure parts on synthetic profiler records: kernels attributed through their
launch, the step account, and replayed graph kernels labelled by their capture ranges."""

from profiler_records import THREAD, graph_timeline, kernel, launch, span

from controller.profiling.attribution import NO_HOST_LAUNCH, device_work, step_ranges
from controller.profiling.graph_labels import (
    UNLABELLED,
    CapturedLaunch,
    captured_launches,
    label_replay,
    replayed_work,
)
from controller.profiling.step_account import step_windows
from controller.profiling.timeline import HostWait, Timeline, launch_kind


def test_a_kernel_goes_to_the_innermost_registry_range_of_its_launch_not_the_module():
    """A Triton launch made inside a registry call inside module and attention ranges counts
    for the registry operator; a cuBLAS launch in the same module outside it, for the module."""
    timeline = Timeline(
        ranges=[
            span("profile:step", 0, 200),
            span("module:Model.layers.*.attention", 5, 150),
            span("registry:rotate_qk", 10, 40),
            span("aten::empty", 12, 14),
            span("registry:split_kv_attention", 45, 90),
            span("registry:rms_norm", 50, 60),  # a registry call made inside another
            span("aten::linear", 100, 140),
            span("aten::mm", 105, 135),
        ],
        launches=[
            launch("cuLaunchKernel", 20, correlation=7),
            launch("cuLaunchKernelEx", 55, correlation=8),
            launch("cuLaunchKernel", 70, correlation=9),
            launch("cudaLaunchKernel", 110, correlation=10),
        ],
        activities=[
            kernel("rotate_kernel", 30, 38, 7),
            kernel("norm_kernel", 60, 62, 8),
            kernel("attention_kernel", 75, 95, 9),
            kernel("gemm", 120, 160, 10),
            kernel("orphan", 170, 171, 99),
        ],
    )
    work = {item.name: item for item in device_work(timeline)}
    regions = {name: (item.region, item.region_kind) for name, item in work.items()}
    assert regions["rotate_kernel"] == ("registry:rotate_qk", "registry")
    assert regions["norm_kernel"] == ("registry:rms_norm", "registry")
    assert regions["attention_kernel"] == ("registry:split_kv_attention", "registry")
    assert regions["gemm"] == ("module:Model.layers.*.attention", "attention")
    assert regions["orphan"] == (NO_HOST_LAUNCH, "outside")  # reported, never dropped
    assert work["orphan"].step == 0


def test_a_launch_on_a_thread_without_ranges_is_placed_on_the_busiest_thread():
    timeline = Timeline(
        ranges=[span("profile:step", 0, 100), span("registry:rms_norm", 10, 20)],
        launches=[launch("cuLaunchKernel", 15, correlation=3, thread=12345)],
        activities=[kernel("norm_kernel", 16, 18, 3)],
    )
    (item,) = device_work(timeline)
    assert (item.region, item.step) == ("registry:rms_norm", 0)


def test_the_step_account_is_busy_time_plus_gaps_of_each_kind():
    steps = [span("profile:step", 0, 50), span("profile:step", 60, 70)]
    timeline = Timeline(
        ranges=steps,
        launches=[launch("cudaLaunchKernel", time, n) for n, time in enumerate((5, 8, 40, 62))],
        waits=[HostWait(name="cudaStreamSynchronize", thread=THREAD, start_us=21, end_us=34.5)],
        activities=[
            kernel("a", 10, 20, 0),
            kernel("b", 20, 35, 1),  # back to back with a: one busy stretch
            kernel("c", 45, 80, 2),  # ends after the host left the step
            kernel("d", 82, 90, 3),  # waits for c: the second window opens when c ends
        ],
    )
    windows = step_windows(step_ranges(timeline), device_work(timeline), timeline.waits)
    first, second = windows
    assert (first.start_us, first.end_us, first.busy_us) == (0, 80, 60)
    assert [(gap.kind, gap.duration_us) for gap in first.gaps] == [
        ("before the first kernel", 10),
        ("after a host wait", 10),
    ]
    assert (second.start_us, second.end_us, second.busy_us) == (80, 90, 8)
    assert [(gap.kind, gap.duration_us) for gap in second.gaps] == [("before the first kernel", 2)]
    for window in windows:
        assert window.busy_us + sum(gap.duration_us for gap in window.gaps) == window.account_us


def test_gaps_between_kernels_without_a_wait_are_launch_gaps_and_a_host_tail_counts():
    timeline = Timeline(
        ranges=[span("profile:step", 0, 30)],
        launches=[launch("cudaLaunchKernel", 1, 0), launch("cudaLaunchKernel", 6, 1)],
        activities=[kernel("a", 2, 4, 0), kernel("b", 7, 9, 1)],
    )
    (window,) = step_windows(step_ranges(timeline), device_work(timeline))
    kinds = [(gap.kind, gap.duration_us) for gap in window.gaps]
    assert kinds == [
        ("before the first kernel", 2),
        ("between kernels", 3),
        ("after the last kernel", 21),
    ]


def captured(kind: str, region: str) -> CapturedLaunch:
    return CapturedLaunch(kind=kind, region=region, region_kind="registry")


def test_replayed_kernels_take_the_labels_of_their_captured_launches_in_order():
    launches = [captured("kernel", "registry:a"), captured("memcpy", "m"), captured("kernel", "b")]
    replayed = [kernel("k0", 0, 1, 5), kernel("c", 1, 2, 5, "memcpy"), kernel("k1", 2, 3, 5)]
    assert label_replay(launches, replayed) == launches


def test_a_replayed_activity_the_capture_lacks_stays_unlabelled_and_the_rest_align():
    launches = [captured("kernel", "a"), captured("kernel", "b"), captured("kernel", "c")]
    replayed = [
        kernel("k0", 0, 1, 5),
        kernel("set", 1, 2, 5, "memset"),
        kernel("k1", 2, 3, 5),
        kernel("k2", 3, 4, 5),
    ]
    labels = label_replay(launches, replayed)
    assert [label.region if label else None for label in labels] == ["a", None, "b", "c"]


def test_a_replayed_graph_is_labelled_by_its_capture_ranges():
    timeline = graph_timeline(extra_kernel=False)
    assert [item.region for item in captured_launches(timeline)] == [
        "registry:gated_gelu",
        "registry:rms_norm",
        "module:Model.mlp",
    ]
    work, labelling = replayed_work(timeline)
    assert [(item.name, item.region, item.step) for item in work[:3]] == [
        ("gelu", "registry:gated_gelu", 0),
        ("norm", "registry:rms_norm", 0),
        ("gemm", "module:Model.mlp", 0),
    ]
    assert [item.step for item in work[3:]] == [1, 1, 1]
    assert labelling.aligned_one_to_one and labelling.labelled_share_of_time == 1.0
    assert labelling.captured_launches == 3 and labelling.replayed_per_step == 3


def test_the_labelled_share_says_how_much_replayed_time_got_no_label():
    work, labelling = replayed_work(graph_timeline(extra_kernel=True))
    assert not labelling.aligned_one_to_one
    assert [item.region for item in work if item.name == "unknown"] == [UNLABELLED]
    assert labelling.labelled_share_of_time == (2 * 34) / (2 * 34 + 6)


def test_launch_calls_are_told_apart_by_name():
    assert launch_kind("cudaLaunchKernel") == "kernel"
    assert launch_kind("cuLaunchKernelEx") == "kernel"
    assert launch_kind("cudaLaunchKernelExC") == "kernel"
    assert launch_kind("cudaMemsetAsync") == "memset"
    assert launch_kind("cudaMemcpyAsync") == "memcpy"
    assert launch_kind("cudaGraphLaunch") == "graph"
    assert launch_kind("cudaStreamSynchronize") is None


def test_work_a_graph_step_launches_outside_its_graph_is_counted_by_its_own_launch():
    work, labelling = replayed_work(graph_timeline(direct_kernel=True))
    (direct,) = [item for item in work if item.name == "offset_fill"]
    assert (direct.region, direct.step) == ("outside any module", 0)
    assert labelling.aligned_one_to_one and labelling.replayed_per_step == 3


def test_replay_labels_are_confirmed_by_the_kernel_names_of_the_eager_reference():
    _work, labelling = replayed_work(graph_timeline(reference=("gelu", "norm", "gemm")))
    assert labelling.name_confirmed_share == 1.0
    _work, labelling = replayed_work(graph_timeline(reference=("gelu", "gemm", "norm")))
    assert labelling.name_confirmed_share == 10 / 34  # a shifted mapping shows as unconfirmed
    _work, labelling = replayed_work(graph_timeline())
    assert labelling.name_confirmed_share is None  # no reference step, no check


class KinetoEvent:
    """The part of torch's `_KinetoEvent` the timeline reads."""

    def __init__(self, name, kind, start_ns, duration_ns, correlation=0, is_async=False):
        self._fields = (name, kind, start_ns, duration_ns, correlation, is_async)

    def name(self):
        return self._fields[0]

    def activity_type(self):
        return self._fields[1]

    def start_ns(self):
        return self._fields[2]

    def duration_ns(self):
        return self._fields[3]

    def correlation_id(self):
        return self._fields[4]

    def is_async(self):
        return self._fields[5]

    def start_thread_id(self):
        return THREAD


def test_the_timeline_reads_ranges_launches_waits_and_device_activities_from_kineto():
    from types import SimpleNamespace

    from controller.profiling.timeline import timeline_from_profiler

    events = [
        KinetoEvent("registry:rms_norm", "user_annotation", 10_000, 8_000),
        KinetoEvent("aten::empty", "cpu_op", 11_000, 500),
        KinetoEvent("aten::async_thing", "cpu_op", 11_000, 500, is_async=True),
        KinetoEvent("cuLaunchKernelEx", "cuda_driver", 12_000, 2_000, correlation=43),
        KinetoEvent("cudaMemsetAsync", "cuda_runtime", 15_000, 1_000, correlation=44),
        KinetoEvent("cudaGetDevice", "cuda_runtime", 16_000, 100, correlation=45),
        KinetoEvent("cudaMemcpy", "cuda_runtime", 19_000, 9_000, correlation=46),
        KinetoEvent("_rms_norm_kernel", "kernel", 14_000, 3_000, correlation=43),
        KinetoEvent("Memset (Device)", "gpu_memset", 17_000, 1_000, correlation=44),
        KinetoEvent("Memcpy DtoH", "gpu_memcpy", 20_000, 2_000, correlation=46),
        KinetoEvent("registry:rms_norm", "gpu_user_annotation", 14_000, 3_000, correlation=43),
    ]
    profiler = SimpleNamespace(profiler=SimpleNamespace(kineto_results=SimpleNamespace()))
    profiler.profiler.kineto_results.events = lambda: events
    timeline = timeline_from_profiler(profiler)
    assert [(item.name, item.start_us, item.end_us) for item in timeline.ranges] == [
        ("registry:rms_norm", 0.0, 8.0),
        ("aten::empty", 1.0, 1.5),
    ]
    assert [(item.name, item.launches, item.correlation) for item in timeline.launches] == [
        ("cuLaunchKernelEx", "kernel", 43),
        ("cudaMemsetAsync", "memset", 44),
        ("cudaMemcpy", "memcpy", 46),
    ]
    assert [(item.name, item.end_us) for item in timeline.waits] == [("cudaMemcpy", 18.0)]
    assert [(item.kind, item.correlation) for item in timeline.activities] == [
        ("kernel", 43),
        ("memset", 44),
        ("memcpy", 46),
    ]
    (kernel_item, *_) = device_work(timeline)
    assert kernel_item.region == "registry:rms_norm"


class OlderKinetoEvent:
    """An event of a torch release whose events lack `activity_type` (2.11)."""

    def __init__(self, name, device_type, annotation=False):
        self._name, self._device_type, self._annotation = name, device_type, annotation

    def name(self):
        return self._name

    def device_type(self):
        return self._device_type

    def is_user_annotation(self):
        return self._annotation


def test_events_without_an_activity_type_are_classified_by_device_annotation_and_name():
    """On the H200's torch 2.11 a range drawn on the device's timeline read as a kernel and
    doubled the registry's share; it is no device activity."""
    from torch.autograd import DeviceType

    from controller.profiling.timeline import activity_type

    cuda, cpu = DeviceType.CUDA, DeviceType.CPU
    assert activity_type(OlderKinetoEvent("triton_rms_norm", cuda)) == "kernel"
    assert activity_type(OlderKinetoEvent("Memcpy HtoD (Pageable -> Device)", cuda)) == (
        "gpu_memcpy"
    )
    assert activity_type(OlderKinetoEvent("Memset (Device)", cuda)) == "gpu_memset"
    assert activity_type(OlderKinetoEvent("registry:rms_norm", cuda, True)) == (
        "gpu_user_annotation"
    )
    assert activity_type(OlderKinetoEvent("registry:rms_norm", cpu, True)) == "user_annotation"
    assert activity_type(OlderKinetoEvent("cudaLaunchKernel", cpu)) == "cuda_runtime"
    assert activity_type(OlderKinetoEvent("cuLaunchKernelEx", cpu)) == "cuda_runtime"
    assert activity_type(OlderKinetoEvent("aten::mm", cpu)) == "cpu_op"
