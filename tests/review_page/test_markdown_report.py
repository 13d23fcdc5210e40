"""A report's Markdown on the page: tables become tables, and nothing in the text becomes
markup, a script or a link target the renderer would not allow."""

from controller.review_page.markdown_html import markdown_html


def test_tables_render_and_raw_html_is_escaped():
    text = (
        "# Optimize\n\n<script>alert(1)</script>\n\n| operator | why |\n| --- | --- |\n"
        "| rms_norm | <img src=x onerror=alert(2)> |\n\n[click](javascript:alert(3))\n"
    )
    html = markdown_html(text)
    assert "<table>" in html and "<td>rms_norm</td>" in html
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html
    assert 'href="javascript:' not in html
