"""Code specialised to the task's visible workloads that fails on sizes it was not shown."""

from gates.evaluator.detectors import CheatDetected


class ShapeSpecificHardcoding(CheatDetected):
    """Every visible workload passes but a hidden workload (sizes the task never listed)
    fails: the solution was fitted to the visible shapes."""
