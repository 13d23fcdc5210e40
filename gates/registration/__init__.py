"""The controller-owned gates that judge one registration attempt.

Each gate is its own module with `check(...) -> Verdict`; `suite.GATES` is the table that runs
them, static gates first, each on its own export of the candidate commit.
"""

GATE_NAMES = (
    "scope",
    "ruff",
    "structure",
    "operator_identity",
    "declaration_truth",
    "kernel_workloads",
    "tests",
    "test_effectiveness",
    "aten_sequence",
    "registry_hits",
    "bit_exact_parity",
)
