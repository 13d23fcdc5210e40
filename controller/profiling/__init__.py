"""Model-driven workloads: running a driver to capture its operator calls or profile it."""
