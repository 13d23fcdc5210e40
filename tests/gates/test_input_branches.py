"""The conditions of a new reference that read its inputs, listed for the reviewer."""

import ast

from gates.registration.input_branches import branches_markdown, input_branches

SOURCE = """
def reference(x, weight, eps=1e-6):
    rows = x.shape[0]
    wide = rows > 4096
    if wide:
        return x * 0
    y = x.float()
    scale = eps if eps > 0 else -eps
    if y.abs().max() > 1e4:
        y = y / 2
    assert len(x) == 2 or x.dim() == 2, "2-D"
    while False:
        pass
    if True:
        pass
    return y * weight * scale
"""


def branches():
    return input_branches(ast.parse(SOURCE).body[0])


def test_conditions_on_inputs_are_found_through_locals_and_classified():
    found = [(b.line, b.kind, b.condition, b.reads) for b in branches()]
    assert found == [
        (5, "if", "wide", "shape"),
        (8, "conditional expression", "eps > 0", "values"),
        (9, "if", "y.abs().max() > 10000.0", "values"),
        (11, "assert", "len(x) == 2 or x.dim() == 2", "shape"),
    ]


def test_the_report_lists_each_condition_and_says_nothing_when_there_are_none():
    lines = branches_markdown([b.model_dump() for b in branches()])
    assert "| 5 | if | shape | `wide` |" in lines
    assert "| 11 | assert | shape | `len(x) == 2 or x.dim() == 2` |" in lines
    assert branches_markdown([]) == []
