"""Runs: the folder each run lives in, its frozen manifest, journal, state machine and engine."""
