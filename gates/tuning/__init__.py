"""The tuning gates: scope, ruff, correctness and latency, run by the controller outside the
agent's fence on each candidate solution of a tune run (see `suite.check_tuning_attempt`)."""

GATE_NAMES = ("scope", "ruff", "correctness", "latency")
