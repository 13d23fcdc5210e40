"""Controller-owned checks that accept or reject every attempt, and the kernel evaluator."""
