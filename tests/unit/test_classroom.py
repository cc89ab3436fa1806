"""The home page's map, the tours and the sources, checked against the catalog they are drawn from."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ui import arc_map
from ui.catalog import BY_SLUG, PAGES, SOURCE_CODES, SOURCES, START, pages_by_section
from ui.tours import STOP_PARAM, TOUR_PARAM, TOURS, stop_params

SVG = "{http://www.w3.org/2000/svg}"
SIDEBAR_ORDER = [info.slug for infos in pages_by_section().values() for info in infos]


def parsed_map() -> ET.Element:
    return ET.fromstring(arc_map.svg().replace("&#95;", "_").replace("&#42;", "*"))


def test_the_map_links_every_page_in_the_sidebars_order():
    links = [a.get("href") for a in parsed_map().iter(f"{SVG}a")]
    assert links == SIDEBAR_ORDER


def test_the_map_draws_one_arrow_per_prerequisite_and_marks_the_start():
    root = parsed_map()
    arrows = [p for p in root.iter(f"{SVG}path") if p.get("marker-end")]
    assert len(arrows) == sum(len(info.needs) for info in PAGES) > len(PAGES) - 7
    titles = [p.find(f"{SVG}title").text for p in arrows]
    assert "Online softmax → FlashAttention" in titles
    start = next(a for a in root.iter(f"{SVG}a") if a.get("href") == START)
    assert "START HERE" in "".join(start.itertext())


def test_prerequisites_come_before_their_pages_and_reach_back_to_the_start():
    position = {slug: i for i, slug in enumerate(SIDEBAR_ORDER)}
    for info in PAGES:
        assert all(position[need] < position[info.slug] for need in info.needs), info.slug
    # every page but the roots can be reached from a root by following arrows forward
    roots = {info.slug for info in PAGES if not info.needs}
    assert START in roots and len(roots) <= 2


def test_arrows_start_and_end_on_their_boxes():
    boxes = arc_map.layout()
    for need, slug in arc_map.edges(boxes):
        numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", arc_map._path(boxes[need], boxes[slug]))]
        (x0, y0), (x1, y1) = numbers[:2], numbers[-2:]
        source, target = boxes[need], boxes[slug]
        assert source.x <= x0 <= source.x + arc_map.BOX_W and source.y <= y0 <= source.y + arc_map.BOX_H
        assert target.x - 3 <= x1 <= target.x + arc_map.BOX_W + 3 and target.y - 3 <= y1 <= target.y + arc_map.BOX_H


def test_every_tour_stop_is_a_page_and_a_url():
    assert {"word-vectors", "decoding", "attention", "positions", "efficiency"} <= {t.key for t in TOURS}
    for tour in TOURS:
        assert len(tour.stops) >= 3
        for index, stop in enumerate(tour.stops):
            assert stop.slug in BY_SLUG and stop.note.endswith(".")
            params = stop_params(tour, index, lecture=True)
            assert params[TOUR_PARAM] == tour.key and params[STOP_PARAM] == str(index + 1)
            assert params["lecture"] == "true" and "lecture" not in stop_params(tour, index, lecture=False)


def test_every_citation_names_a_source():
    codes = {source.code for source in SOURCES}
    for info in PAGES:
        cited = set(SOURCE_CODES.findall(info.follows))
        assert cited and cited <= codes, info.slug
        # each part of a citation starts with the source it cites, so none goes unlinked
        assert all(SOURCE_CODES.match(part.strip()) for part in info.follows.split(";")), info.slug
    assert all(any(s.code in info.follows for info in PAGES) for s in SOURCES)
