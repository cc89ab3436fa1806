"""The README's pictures of the app: a fresh server and Debian's chromium, driven with the browser tests' own
helpers (harness/browser.py); each page is opened, waited on until its run has finished and every chart has
drawn, checked for exceptions and errors, cropped to what the picture shows and saved as a lossless WebP in
docs/screenshots/. Needs SmolLM2's file (python -m engine.llm.files) for the neuron view.
Usage: python -m benchmarks.screenshots
"""
from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from benchmarks import smollm_present
from harness.browser import TWO_FRAMES, assert_clean, chromium, new_tab, open_url, save_screenshot
from serve.process import Server

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "docs" / "screenshots"
SCALE = 2  # device pixels per CSS px: sharp on high-density screens and when a reader opens a picture to zoom
MARGIN = 12  # CSS px of page kept around a cropped region; less than the 16 px between two elements
BUDGET_KB = 600  # the pictures together; tests/unit/test_readme_pictures.py holds them under 1 MB
# the page's first row of columns that holds a chart (its controls' rows hold none)
CHART_ROW = "[data-testid='stMainBlockContainer'] [data-testid='stHorizontalBlock']:has(.js-plotly-plot)"
DRAWN = """() => document.fonts.status === 'loaded' && Array.from(
  document.querySelectorAll("[data-testid='stPlotlyChart']")).every(c => c.querySelector('.main-svg'))"""
REGION = """(shows) => {
  const column = document.querySelector("[data-testid='stMainBlockContainer'] > [data-testid='stVerticalBlock']");
  const title = document.querySelector("[data-testid='stMainBlockContainer'] h1");
  const [c, t, e] = [column, title, document.querySelector(shows)].map(x => x.getBoundingClientRect());
  return [c.left, t.top, c.right, e.bottom];
}"""


@dataclass(frozen=True)
class Shot:
    name: str  # the picture's file name, without .webp
    url: str
    width: int  # the window's size in CSS px
    height: int
    shows: str  # what the picture is of: waited for, then every chart on the page, before the shot
    crop: bool = True  # the main column from the title to the foot of `shows`; False: the whole window


SHOTS = (
    Shot("home", "/", 1280, 1200, "svg[aria-label='Map of the topics']"),  # the guided tours and the whole map
    Shot("lecture_transformer_lm", "/transformer_lm?lecture=true", 1280, 720, ".js-plotly-plot",
         crop=False),  # what a projector shows
    Shot("smollm_neuron_view", "/smollm?view=Neuron+view", 1280, 1300, CHART_ROW),
    Shot("flash_attention_tiles", "/flash_attention", 1280, 1300, CHART_ROW),
)


def picture(shot: Shot) -> Path:
    return OUT / f"{shot.name}.webp"


def crop_box(tab, shot: Shot) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of the shot's region in the picture's device pixels."""
    left, top, right, bottom = tab.evaluate(REGION, shot.shows)
    assert bottom + MARGIN <= shot.height, f"{shot.url}: the region ends at {bottom:.0f} px; make the window taller"
    return (SCALE * max(0, int(left) - MARGIN), SCALE * max(0, int(top) - MARGIN),
            SCALE * min(shot.width, int(right) + MARGIN), SCALE * (int(bottom) + MARGIN))


def take(browser, url: str, shot: Shot, raw: Path) -> Path:
    """Open the shot's page in a fresh session, wait until it has drawn, check it, and save the picture."""
    tab = new_tab(browser, url, viewport={"width": shot.width, "height": shot.height}, device_scale_factor=SCALE)
    try:
        open_url(tab, shot.url)
        tab.locator(shot.shows).first.wait_for(timeout=30_000)  # plotly mounts after the run has finished
        tab.wait_for_function(DRAWN, timeout=30_000)
        tab.evaluate(TWO_FRAMES)
        assert_clean(tab)
        save_screenshot(tab, raw, whole_page=False)
        box = crop_box(tab, shot) if shot.crop else None
    finally:
        tab.context.close()
    out = picture(shot)
    with Image.open(raw) as image:
        # lossless: no blur on text and no banding in colour scales, and smaller than a 256-colour PNG here
        (image.crop(box) if box else image).convert("RGB").save(out, "WEBP", lossless=True, method=6)
    return out


def main() -> int:
    if not smollm_present():
        print("SmolLM2's file is missing: run `python -m engine.llm.files` first (the neuron view needs it)")
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    server = Server(ROOT / "app.py", ROOT)
    try:
        with chromium() as browser, tempfile.TemporaryDirectory() as scratch:
            outs = [take(browser, server.url, shot, Path(scratch) / f"{shot.name}.png") for shot in SHOTS]
    finally:
        server.stop()
    total = 0
    for out in outs:
        total += out.stat().st_size
        with Image.open(out) as image:
            print(f"{out.relative_to(ROOT)}  {image.width} x {image.height}  {out.stat().st_size / 1024:.0f} KB")
    print(f"together {total / 1024:.0f} KB (budget {BUDGET_KB} KB)")
    return 0 if total <= BUDGET_KB * 1024 else 1


if __name__ == "__main__":
    sys.exit(main())
