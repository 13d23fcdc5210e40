"""Parse Python source under one lock, for every controller thread.

CPython 3.11's AST constructor keeps its recursion-depth counter per interpreter, not per
thread: two threads parsing at once can fail with "AST constructor recursion depth
mismatch" (seen when the evaluator tests ran three evaluations in threads). Parsing is
quick, so a single lock costs nothing measurable.
"""

import ast
import threading

_PARSER = threading.Lock()


def parse_python(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse`, one thread at a time."""
    with _PARSER:
        return ast.parse(source, filename=filename, mode=mode)
