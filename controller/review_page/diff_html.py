"""A unified diff as highlighted HTML by Pygments, with the style sheet the page inlines."""

from functools import cache

DIFF_CLASS = "diff"


def diff_html(diff: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import DiffLexer

    return highlight(diff, DiffLexer(), HtmlFormatter(cssclass=DIFF_CLASS))


@cache
def diff_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(f".{DIFF_CLASS}")
