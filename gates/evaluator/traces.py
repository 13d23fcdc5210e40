"""An evaluation result as FlashInfer Trace records, one per workload of the task."""

import datetime

import torch
import triton

from gates.evaluator.protocol import EvaluationResult
from gates.tasks.package import TaskPackage
from gates.tasks.trace import Correctness, Environment, Evaluation, Performance, Trace


def result_traces(result: EvaluationResult, task: TaskPackage) -> list[Trace]:
    """One evaluated trace per workload, carrying its latency where one was measured."""
    hardware = torch.cuda.get_device_name() if result.device == "cuda" else "cpu (interpreter)"
    environment = Environment(
        hardware=hardware, libs={"torch": torch.__version__, "triton": triton.__version__}
    )
    timestamp = datetime.datetime.now(datetime.UTC).isoformat()
    correctness = None
    if result.status in ("PASSED", "INCORRECT_NUMERICAL"):
        correctness = Correctness(
            max_absolute_error=result.max_absolute_error,
            max_relative_error=result.max_relative_error,
            extra={"cases_checked": result.cases_checked},
        )
    traces = []
    timing = result.timing.workloads if result.timing else {}
    for workload_trace in task.workloads:
        name = workload_trace.workload.uuid.removeprefix(f"{task.definition.name}-")
        row = timing.get(name)
        performance = None
        if result.status == "PASSED" and row is not None:
            performance = Performance(
                latency_ms=row.candidate_median_us / 1e3,
                reference_latency_ms=row.baseline_median_us / 1e3,
                speedup_factor=row.speedup or 0.0,
            )
        evaluation = Evaluation(
            status=result.status,
            environment=environment,
            timestamp=timestamp,
            log=result.reason,
            correctness=correctness,
            performance=performance,
        )
        traces.append(
            Trace(
                definition=task.definition.name,
                workload=workload_trace.workload,
                solution=result.solution,
                evaluation=evaluation,
                weight=workload_trace.weight,
            )
        )
    return traces
