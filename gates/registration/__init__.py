"""The eight controller-owned gates that judge one registration attempt.

Each gate is its own module with `check(...) -> Verdict`; `suite.check_attempt` runs them all
so a failed attempt's feedback is complete.
"""

GATE_NAMES = (
    "scope",
    "structure",
    "ruff",
    "tests",
    "test_effectiveness",
    "aten_sequence",
    "registry_hits",
    "bit_exact_parity",
)
