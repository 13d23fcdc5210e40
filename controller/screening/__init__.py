"""Screening a kernel's declared tuning space: every point compiled, checked on one case per
workload and timed from a cheap CUDA-graph replay, so the autotune agent submits only the best
few points to the full evaluator. The screen is the agent's own tool: it runs inside the fence
and ranks, and the controller's gates still judge whatever is submitted."""
