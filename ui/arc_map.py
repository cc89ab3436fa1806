"""The home page's map: every page as a box, one column per section in the sidebar's order, an arrow from
each page to the pages that build on it. Drawn as SVG text (no Streamlit here), each box a link to its page."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape as escape_html

from ui.catalog import START, PageInfo, pages_by_section

COLUMN_W, BOX_W, BOX_H, ROW_H, TOP = 212, 184, 48, 62, 56  # px in the SVG's own units
LINE_CHARS = 24  # a title longer than this wraps onto a second line


@dataclass(frozen=True)
class Box:
    info: PageInfo
    column: int
    row: int

    @property
    def x(self) -> float:
        return 14 + self.column * COLUMN_W

    @property
    def y(self) -> float:
        return TOP + self.row * ROW_H


def escape(text: str) -> str:
    """HTML-escaped, and safe from Markdown too: the page renders the SVG through st.markdown, which keeps
    SVG where st.html drops it, and would read "d_k" as emphasis."""
    return escape_html(text).replace("_", "&#95;").replace("*", "&#42;")


def layout() -> dict[str, Box]:
    return {info.slug: Box(info, column, row)
            for column, pages in enumerate(pages_by_section().values()) for row, info in enumerate(pages)}


def edges(boxes: dict[str, Box]) -> list[tuple[str, str]]:
    """(prerequisite, page) pairs, in catalog order."""
    return [(need, slug) for slug, box in boxes.items() for need in box.info.needs]


def _wrap(title: str) -> list[str]:
    if len(title) <= LINE_CHARS:
        return [title]
    cut = title.rfind(" ", 0, LINE_CHARS)
    return [title[:cut], title[cut + 1:]]


def _path(source: Box, target: Box) -> str:
    """An arrow's path: straight down to the next box, around the left side within a column, else a curve
    between the facing sides of two columns."""
    if source.column == target.column:
        if target.row == source.row + 1:
            x = source.x + BOX_W / 2
            return f"M{x},{source.y + BOX_H} L{x},{target.y - 2}"
        x0, y0, y1 = source.x, source.y + BOX_H / 2, target.y + BOX_H / 2
        bend = 10 + 4 * abs(target.row - source.row)
        return f"M{x0},{y0} C{x0 - bend},{y0} {x0 - bend},{y1} {x0 - 2},{y1}"
    forward = source.column < target.column
    x0 = source.x + (BOX_W if forward else 0)
    x1 = target.x - 2 if forward else target.x + BOX_W + 2
    y0, y1 = source.y + BOX_H / 2, target.y + BOX_H / 2
    middle = (x0 + x1) / 2
    return f"M{x0},{y0} C{middle},{y0} {middle},{y1} {x1},{y1}"


def svg() -> str:
    boxes = layout()
    sections = list(pages_by_section())
    width = 14 + len(sections) * COLUMN_W
    height = TOP + max(box.row for box in boxes.values()) * ROW_H + BOX_H + 12
    # a group, not an image: an image's content is one picture to a screen reader, and the boxes are links
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" role="group" '
        f'aria-label="Map of the topics" style="max-width:{width}px;font-family:sans-serif">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8a94a6"/></marker></defs>',
    ]
    for column, section in enumerate(sections):
        parts.append(f'<text x="{14 + column * COLUMN_W}" y="{TOP - 18}" font-size="15" font-weight="700" '
                     f'fill="#111">{escape(section)}</text>')
    for need, slug in edges(boxes):
        parts.append(f'<path d="{_path(boxes[need], boxes[slug])}" fill="none" stroke="#8a94a6" '
                     f'stroke-width="1.4" marker-end="url(#arrow)"><title>{escape(boxes[need].info.title)} → '
                     f'{escape(boxes[slug].info.title)}</title></path>')
    for slug, box in boxes.items():
        start = slug == START
        lines = _wrap(box.info.title)
        first_y = box.y + BOX_H / 2 + 5 - 8 * (len(lines) - 1)
        text = "".join(f'<tspan x="{box.x + 10}" y="{first_y + 16 * i}">{escape(line)}</tspan>'
                       for i, line in enumerate(lines))
        parts.append(
            f'<a href="{escape(slug)}" target="_self" style="text-decoration:none" '
            f'aria-label="{escape(box.info.title)}">'
            f'<title>{box.info.year} · {escape(box.info.summary)}</title>'
            f'<rect x="{box.x}" y="{box.y}" width="{BOX_W}" height="{BOX_H}" rx="8" '
            f'fill="{"#1f4fbf" if start else "#eef2f8"}" stroke="#1f4fbf" stroke-width="{2 if start else 1}"/>'
            f'<text font-size="14" fill="{"#fff" if start else "#111"}">{text}</text>'
            f'<text x="{box.x + BOX_W - 8}" y="{box.y + 14}" font-size="10" text-anchor="end" '
            f'fill="{"#dfe7fb" if start else "#5b6472"}">{"START HERE" if start else box.info.year}</text></a>')
    parts.append("</svg>")
    return "".join(parts)
