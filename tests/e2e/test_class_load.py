"""A class opening the lecturer's link: several browser sessions at once on a cold server, on the pages with
the most figures. Before ui/server.py imported every library first, six sessions here got a page exception
(plotly handed a half-imported pandas) in two runs of two."""
from __future__ import annotations

import asyncio

import pytest

from harness.arrival import HEAVY, class_arrives
from harness.browser import CHROMIUM, CHROMIUM_ARGS
from tests.e2e.conftest import HAVE_CHROMIUM, NO_CHROMIUM

pytestmark = pytest.mark.e2e
SESSIONS = 8


@pytest.fixture(scope="module", autouse=True)
def warm_server():
    """The server as it is served: the default views begin computing in the background as it starts, racing the
    class's first runs (tests/conftest.py turns that off for the rest of the suite)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOW_LMS_WARM", "1")
        yield


@pytest.fixture(scope="module")
def app_url(own_app_url):
    """A cold server of the module's own, warming as it starts (warm_server is set first, as autouse)."""
    return own_app_url


async def arrive(url: str) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            return await class_arrives(browser, url, HEAVY[:SESSIONS])
        finally:
            await browser.close()


@pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)
def test_a_class_at_once_on_a_cold_server_sees_no_exception(app_url):
    arrival = asyncio.run(arrive(app_url))
    problems = {v["page"]: v["failed"] or v["exceptions"] for v in arrival["visits"] if v["failed"] or v["exceptions"]}
    assert problems == {}
