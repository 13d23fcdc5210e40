"""Rules every flow holds a candidate's changed files to, in one implementation.

Registration and tuning judge different trees, but the limits on size and count, what counts
as a text file and which ruff suppressions are refused are the same, so no flow's gates can be
softer than another's.
"""
