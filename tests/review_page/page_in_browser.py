"""Open a run's review page in headless Chromium the way a reviewer would, and return what
the browser saw: console errors, the attempts and gates on the page, the charts as drawn
(their data groups' rendered sizes and point counts), anything the page would fetch (a data:
URI is part of the page) and a screenshot. Skips the calling test, with the reason, only where
no browser is installed."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from headless_browser import PageLoad, find_browser  # noqa: E402

SEEN = """(() => {
  const box = (element) => { const r = element.getBoundingClientRect();
                              return [r.width, r.height]; };
  return {
    attempts: [...document.querySelectorAll('section.attempt')].map((section) => ({
      number: Number(section.dataset.attempt),
      status: section.dataset.status,
      gates: [...section.querySelectorAll('details.gate')].map((gate) => ({
        gate: gate.dataset.gate, outcome: gate.dataset.outcome,
        details: gate.querySelector('pre').textContent.length })),
      diffLines: section.querySelectorAll('.diff-block .diff pre span').length,
    })),
    charts: [...document.querySelectorAll('figure.chart')].map((chart) => {
      const groups = [...chart.querySelectorAll('svg g[id*="-data-"]')];
      return {
        chart: chart.dataset.chart,
        declaredPoints: Number(chart.dataset.points),
        svgSize: box(chart.querySelector('svg')),
        series: groups.length,
        drawnSeries: groups.filter((g) => { const [w, h] = box(g); return w > 0 && h > 0; })
          .length,
        markers: groups.reduce((n, g) => n + g.querySelectorAll('use').length, 0),
        bars: groups.reduce((n, g) => n + g.querySelectorAll('path').length, 0),
      };
    }),
    transcripts: document.querySelectorAll('details.transcript').length,
    manifest: document.body.textContent.includes('the frozen manifest'),
    external: [...document.querySelectorAll('[src], link[href]')]
      .filter((e) => !(e.getAttribute('src') || e.getAttribute('href') || '').startsWith('data:'))
      .map((e) => e.outerHTML),
  };
})()"""


def open_review_page(page: Path, screenshot: Path) -> tuple[dict, PageLoad]:
    """What the page showed once loaded, and the load (its errors and timing)."""
    browser = find_browser()
    if browser is None:
        pytest.skip("no Chromium installed (.ci/run installs Debian's chromium package)")
    load = PageLoad(browser, page)
    try:
        seen = load.evaluate(SEEN)
        image = load.screenshot(screenshot)
    finally:
        load.close()
    assert image.startswith(b"\x89PNG") and len(image) > 20_000, "the screenshot is blank"
    return seen, load


def assert_charts_drew(seen: dict) -> None:
    """Every chart on the page has an SVG of real size and every data series rendered with at
    least as many markers or bars as the points it declares."""
    assert seen["charts"], "the page has no chart"
    for chart in seen["charts"]:
        width, height = chart["svgSize"]
        assert width > 200 and height > 80, chart
        assert chart["series"] > 0 and chart["drawnSeries"] == chart["series"], chart
        assert chart["declaredPoints"] > 0, chart
        assert chart["markers"] + chart["bars"] >= chart["declaredPoints"], chart
