"""A report's Markdown as HTML, by a maintained CommonMark renderer with tables on.

Raw HTML in the text is escaped, never passed through: a report quotes reasons an agent's
code can influence, so nothing in it may become markup, a script or a link it did not write
as a link (the renderer also refuses `javascript:` and similar link targets).
"""

from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown_html(text: str) -> str:
    return _RENDERER.render(text)
