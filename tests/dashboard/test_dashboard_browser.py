"""The dashboard in a real browser: a real daemon, real DXF, IFC and FreeCAD hosts, real MCP SDK clients."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from tests.core.helpers import call, find_target, wait_for_hosts
from tests.dashboard.conftest import Rig, freecad_missing

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(600)]

COUNT_CIRCLES = "len(msp.query('CIRCLE'))"
ADD_WALL = "api.root.create_entity(model, ifc_class='IfcWall', name='Reviewed wall')"
COUNT_OBJECTS = "len(doc.Objects)"
ADD_BLOCK = """
body = doc.addObject("PartDesign::Body", "Block")
sketch = body.newObject("Sketcher::SketchObject", "BlockSketch")
sketch.Support = (body.Origin.OriginFeatures[3], [""])
sketch.MapMode = "FlatFace"
corners = [Vector(-30, -30, 0), Vector(-10, -30, 0), Vector(-10, -10, 0), Vector(-30, -10, 0)]
for i in range(4):
    sketch.addGeometry(Part.LineSegment(corners[i], corners[(i + 1) % 4]))
pad = body.newObject("PartDesign::Pad", "BlockPad")
pad.Profile = sketch
pad.Length = 25
doc.recompute()
round(pad.Shape.Volume, 3)
"""
PIXELS = """
const img = arguments[0];
if (!img.complete || !img.naturalWidth) return null;
const canvas = document.createElement("canvas");
canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
const context = canvas.getContext("2d");
context.drawImage(img, 0, 0);
const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
let digest = 0, orange = 0;
for (let i = 0; i < data.length; i += 4) {
  const r = data[i], g = data[i + 1], b = data[i + 2];
  digest = (digest * 31 + r + 7 * g + 13 * b) | 0;
  if (r > 90 && b < 0.25 * r && g > 0.25 * r && g < 0.6 * r) orange++;  // the marks' orange, shaded or not
}
return {digest: `${canvas.width}x${canvas.height}:${digest}`, orange};
"""


async def until(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    """Poll `check` (run in a thread: Selenium blocks) until it returns something true; an element
    the page re-rendered meanwhile counts as not yet."""
    from selenium.common.exceptions import (
        ElementClickInterceptedException,
        ElementNotInteractableException,
        StaleElementReferenceException,
    )

    with anyio.fail_after(timeout):
        while True:
            try:
                found = await anyio.to_thread.run_sync(check)
            except (
                StaleElementReferenceException,
                ElementNotInteractableException,
                ElementClickInterceptedException,
                IndexError,
                StopIteration,
            ):
                found = None
            if found:
                return found
            await anyio.sleep(0.1)


def press(driver: Any, element: Any) -> None:
    """Click `element` as a person would, after scrolling it to the middle (clear of the sticky bar)."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


async def code(session: Any, cap: dict[str, Any], text: str) -> Any:
    return await call(session, "invoke_dynamic", {"id": cap["id"], "arguments": {"code": text}})


async def last_call_id(agent: Any) -> str:
    """The call id of the agent's last change, as the agent reads it (the daemon's list_checkpoints)."""
    cap = await find_target(agent, "list_checkpoints", "cadmcp")
    listed = await call(agent, "invoke_dynamic", {"id": cap["id"], "arguments": {}})
    return str(listed.structured_content["checkpoints"][-1]["callId"])


async def test_the_login_link_opens_the_page_once_and_it_shows_both_hosts(rig: Rig, browser: Any) -> None:
    cards = await until(lambda: [c.text for c in css(browser, "#host-list > li")] or None)
    assert any("DXF" in c and f"pid {rig.dxf_pid}" in c and "plan.dxf" in c for c in cards), cards
    assert any("IFC" in c and f"pid {rig.ifc_pid}" in c and "house.ifc" in c for c in cards), cards
    assert "live" in browser.find_element("id", "live").text
    cookie = browser.get_cookie("cadmcp_dashboard")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/dashboard"


async def test_an_agents_call_appears_live_and_the_drawing_picture_changes(rig: Rig, browser: Any) -> None:
    view = await until(lambda: css(browser, f'.view[data-host$="-{rig.dxf_pid}"] img[data-revision]'))
    before = view[0].get_attribute("data-revision")
    async with rig.agent() as agent:
        await wait_for_hosts(agent, rig.hosts, timeout=90)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        added = await code(agent, dxf, "msp.add_circle((5, 5), 2).dxf.handle")
        assert not added.is_error, added
        handle = added.content[0].text.split("Result: ", 1)[1].split()[0].strip("'")
        call_id = await last_call_id(agent)
        row = await until(
            lambda: [r.text for r in css(browser, "#call-rows tr") if call_id in r.text] or None
        )
        assert "invoke_dynamic → execute_python_code" in row[0] and "ok" in row[0]
        await until(
            lambda: (
                css(browser, f'.view[data-host$="-{rig.dxf_pid}"] img[data-revision]')[0].get_attribute(
                    "data-revision"
                )
                != before
            )
        )
        # what the call created is marked in the picture, as the host reported it
        marks = f'.view[data-host$="-{rig.dxf_pid}"] .marks'
        await until(lambda: handle in (css(browser, marks)[0].get_attribute("data-marked") or "").split())
        assert "1 created, 0 modified, 0 deleted" in css(browser, marks)[0].text
        assert "1 marked in orange" in css(browser, marks)[0].text
        assert await until(lambda: _orange(browser, rig.dxf_pid))
        # the whole call, as the log keeps it, one click away
        press(browser, css(browser, f'#call-rows tr[data-call="{_row_id(browser, call_id)}"]')[0])
        body = await until(lambda: browser.find_element("id", "call-dialog-body").text.count("add_circle"))
        assert body
        press(browser, browser.find_element("id", "call-dialog-close"))
        # undo from the page restores the drawing (checked through the host)
        before_count = (await code(agent, dxf, COUNT_CIRCLES)).content[0].text
        undo = [b for b in css(browser, f'.view[data-host$="-{rig.dxf_pid}"] button') if b.text == "Undo"]
        press(browser, undo[0])
        await until(lambda: "Undid" in _note(browser, rig.dxf_pid) or "undid" in _note(browser, rig.dxf_pid))
        after = (await code(agent, dxf, COUNT_CIRCLES)).content[0].text
        assert _number(after) == _number(before_count) - 1, (before_count, after)
        # the undo leaves nothing to mark: the next picture has no orange, the caption goes
        await until(lambda: not css(browser, marks)[0].text and _orange(browser, rig.dxf_pid) == 0)


def _orange(browser: Any, pid: int) -> int | None:
    """How many pixels of host `pid`'s picture on the page are of the marks' orange hue (None: no picture
    yet); no colour of the sample drawing, model or part's palette is of that hue."""
    pixels = _pixels(browser, pid)
    return int(pixels["orange"]) if pixels else None


def _picture(browser: Any, pid: int) -> str | None:
    """A digest of the pixels the page shows for host `pid`'s document (None until it has one)."""
    pixels = _pixels(browser, pid)
    return str(pixels["digest"]) if pixels else None


def _pixels(browser: Any, pid: int) -> dict[str, Any] | None:
    imgs = css(browser, f'.view[data-host$="-{pid}"] img[data-revision]')
    return browser.execute_script(PIXELS, imgs[0]) if imgs else None


async def test_a_freecad_document_shows_changes_after_an_edit_and_undo_from_the_page_restores_it(
    rig: Rig, browser: Any
) -> None:
    if rig.freecad_pid is None:
        pytest.skip(freecad_missing() or "no FreeCAD host")
    pid = rig.freecad_pid
    cards = await until(lambda: [c.text for c in css(browser, f'#host-list > li[data-host$="-{pid}"]')], 90)
    assert "FreeCAD" in cards[0] and "bracket.FCStd" in cards[0], cards
    first = await until(lambda: _picture(browser, pid), timeout=120)
    async with rig.agent() as agent:
        await wait_for_hosts(agent, rig.hosts, timeout=90)
        fc = await find_target(agent, "execute_python_code", "FreeCAD")
        objects = _number((await code(agent, fc, COUNT_OBJECTS)).content[0].text.split("\n")[0])
        added = await code(agent, fc, ADD_BLOCK)
        assert not added.is_error, added
        assert "[UNDO STEP]" in added.content[0].text
        # the picture the page shows is another one: the block stands beside the bracket
        # what the step created is marked in the picture, by the names the host reported
        marks = f'.view[data-host$="-{pid}"] .marks'
        await until(
            lambda: "Block" in (css(browser, marks)[0].get_attribute("data-marked") or ""), timeout=120
        )
        assert "marked in orange" in css(browser, marks)[0].text and "created" in css(browser, marks)[0].text
        assert await until(lambda: _orange(browser, pid), timeout=60)
        changed = _picture(browser, pid)
        assert changed != first
        assert _number((await code(agent, fc, COUNT_OBJECTS)).content[0].text.split("\n")[0]) > objects
        undo = [b for b in css(browser, f'.view[data-host$="-{pid}"] button') if b.text == "Undo"]
        press(browser, undo[0])
        await until(lambda: "undid" in _note(browser, pid).lower(), timeout=120)
        assert _note(browser, pid).startswith("Undid 1 step: '"), _note(browser, pid)  # a sentence, not JSON
        # checked through the host: the document is as it was, and so is its picture
        assert _number((await code(agent, fc, COUNT_OBJECTS)).content[0].text.split("\n")[0]) == objects
        restored = await until(lambda: (p := _picture(browser, pid)) != changed and p, timeout=120)
        assert restored == first
        await until(lambda: not css(browser, marks)[0].text)  # nothing left to mark


def _row_id(browser: Any, call_id: str) -> str:
    rows = [r for r in css(browser, "#call-rows tr") if call_id in r.text]
    return str(rows[0].get_attribute("data-call"))


def _note(browser: Any, pid: int) -> str:
    notes = css(browser, f'.view[data-host$="-{pid}"] .said')  # what the page's undo or redo answered
    return str(notes[0].text) if notes else ""


def _number(text: str) -> int:
    return int(text.rsplit(" ", 1)[-1])


async def test_revert_from_the_history_list_undoes_that_call_on_its_host(rig: Rig, browser: Any) -> None:
    async with rig.agent() as agent:
        await wait_for_hosts(agent, rig.hosts, timeout=90)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        before = _number((await code(agent, dxf, COUNT_CIRCLES)).content[0].text)
        assert not (await code(agent, dxf, "msp.add_circle((9, 9), 1)")).is_error
        call_id = await last_call_id(agent)
        row = f'tr[data-checkpoint="{call_id}"] button'
        buttons = await until(lambda: [b for b in css(browser, row) if b.text == "Revert"])
        cells = css(browser, f'tr[data-checkpoint="{call_id}"] td')
        assert cells[1].text, [c.text for c in cells]  # when the call was made
        press(browser, buttons[0])
        asked = await until(lambda: _alert(browser))  # one click asked first: it undoes the agent's work
        assert f"Revert {call_id}" in asked.text and "Its steps are undone there" in asked.text
        asked.accept()
        said = await until(lambda: browser.find_element("id", "history-message").text)
        assert f"Reverted {call_id}" in said and "back 1 step(s)" in said
        assert _number((await code(agent, dxf, COUNT_CIRCLES)).content[0].text) == before
        await until(lambda: "(reverted)" in css(browser, f'tr[data-checkpoint="{call_id}"]')[0].text)


async def test_revert_since_asks_naming_every_document_it_would_undo(rig: Rig, browser: Any) -> None:
    """The agent changed the drawing, then the part; "Revert since" on the drawing's call asked
    about the drawing only ("... in poly4.dxf? Its steps are undone there") and undid the part too."""
    if rig.freecad_pid is None:
        pytest.skip(freecad_missing() or "no FreeCAD host")
    async with rig.agent() as agent:
        await wait_for_hosts(agent, rig.hosts, timeout=90)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        fc = await find_target(agent, "execute_python_code", "FreeCAD")
        assert not (await code(agent, dxf, "msp.add_circle((7, 7), 1)")).is_error
        call_id = await last_call_id(agent)
        assert not (await code(agent, fc, ADD_BLOCK)).is_error
        row = f'tr[data-checkpoint="{call_id}"] button'
        buttons = await until(lambda: [b for b in css(browser, row) if b.text == "Revert since"])
        press(browser, buttons[0])
        asked = await until(lambda: _alert(browser))
        text = asked.text
        asked.dismiss()  # nothing is reverted
        assert f"Revert {call_id} and every later call through the same agent, 2 call(s)," in text, text
        assert "in each of 2 documents:" in text and "plan.dxf" in text and "bracket.FCStd" in text, text


def _alert(browser: Any) -> Any:
    """The page's open confirmation dialog, or None."""
    from selenium.common.exceptions import NoAlertPresentException

    try:
        return browser.switch_to.alert
    except NoAlertPresentException:
        return None


async def ifc_walls(session: Any) -> int:
    """The IFC model's wall count, read from the host (reads are not confirmed)."""
    found = await call(session, "search_dynamic", {"query": "model context", "limit": 32})
    cap = next(i for i in found.structured_content["items"] if i["target"] == "ifc://model/context")
    read = await call(session, "invoke_dynamic", {"id": cap["id"]})
    return int(json.loads(read.content[0].resource.text)["elementCounts"].get("IfcWall", 0))


async def test_a_queued_change_runs_when_approved_and_leaves_the_model_as_it_was_when_rejected(
    rig: Rig, browser: Any
) -> None:
    async with rig.agent(era="legacy") as unaskable:  # no elicitation: its confirmations wait in the queue
        await wait_for_hosts(unaskable, rig.hosts, timeout=90)
        ifc = await find_target(unaskable, "execute_python_code", "IFC")
        walls = await ifc_walls(unaskable)
        for verdict, added in (("Reject", 0), ("Approve", 1)):
            results: list[Any] = []

            async def ask(cap: dict[str, Any] = ifc, into: list[Any] = results) -> None:
                into.append(await code(unaskable, cap, ADD_WALL))

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                cards = await until(lambda: css(browser, "#approval-list > li"), timeout=200)
                text = cards[0].text
                assert "execute_python_code on IFC" in text and "Reviewed wall" in text, text
                assert "Preview: created 1" in text  # what the preview says the change does
                pictures = css(browser, "#approval-list .pictures img")
                assert [p.get_attribute("alt").split()[0] for p in pictures] == ["Before", "After"]
                left = css(browser, '#approval-list [data-tick="until"]')[0].text
                await until(  # the time left counts down on the page
                    lambda was=left: css(browser, '#approval-list [data-tick="until"]')[0].text != was,
                    timeout=10,
                )

                def answer(label: str = verdict) -> bool:
                    press(browser, next(b for b in css(browser, "#approval-list button") if b.text == label))
                    return True

                await until(answer)
            assert results[0].is_error == (verdict == "Reject"), results[0]
            assert await ifc_walls(unaskable) == walls + added
            await until(lambda: not css(browser, "#approval-list > li"))
            # the page says what became of it: after Approve it said nothing, even when it failed
            said = await until(lambda: browser.find_element("id", "approval-message").text)
            if verdict == "Approve":
                await until(lambda: "it ran: " in browser.find_element("id", "approval-message").text)
            else:
                assert said.startswith("Rejected execute_python_code on IFC") and "did not run" in said, said

        # a change no picture shows: said beside the pictures (it was said to the agent only)
        rename = "model.by_type('IfcWall')[0].Description = 'checked'"
        async with anyio.create_task_group() as tg:
            tg.start_soon(code, unaskable, ifc, rename)
            notes = await until(lambda: [n.text for n in css(browser, "#approval-list .warn")], timeout=200)
            assert any("pictures are the same" in n for n in notes), notes
            press(browser, next(b for b in css(browser, "#approval-list button") if b.text == "Reject"))
        await until(lambda: not css(browser, "#approval-list > li"))


async def test_the_catalog_searches_as_the_agent_does_and_says_why(rig: Rig, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    box = browser.find_element(By.ID, "catalog-query")
    box.clear()
    box.send_keys("undo the last change\n")
    items = await until(lambda: [i.text for i in css(browser, "#catalog-list > li")] or None)
    assert any("navigate_history" in i or "Undo" in i for i in items[:3]), items


async def test_a_page_that_stops_reading_does_not_stall_the_agents_calls(rig: Rig, browser: Any) -> None:
    import socket
    from urllib.parse import urlsplit

    from tests.dashboard.test_dashboard_access import login

    cookie, _ = login(rig)
    parts = urlsplit(rig.base)
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # a tiny window, never read
    stalled.connect((parts.hostname, parts.port))
    stalled.sendall(
        f"GET /dashboard/api/events HTTP/1.1\r\nHost: {parts.netloc}\r\nCookie: {cookie}\r\n\r\n".encode()
    )
    try:
        async with rig.agent() as agent:
            await wait_for_hosts(agent, rig.hosts, timeout=90)
            dxf = await find_target(agent, "execute_python_code", "DXF")
            with anyio.fail_after(120):  # a hang check: the calls do not wait for the stalled page
                for n in range(60):
                    answer = await call(agent, "search_dynamic", {"query": f"layer {n} " + "wall " * 60})
                    assert not answer.is_error
                last = await code(agent, dxf, "len(msp)")
            assert not last.is_error
            # the page that reads still sees the calls as they happen
            await until(
                lambda: any(
                    "len(msp)" in r.text or "execute_python_code" in r.text
                    for r in css(browser, "#call-rows tr")
                )
            )
    finally:
        stalled.close()


async def test_a_calls_pictures_show_inline_in_the_timeline_and_whole_in_the_call(
    rig: Rig, browser: Any
) -> None:
    import base64
    import io

    from PIL import Image

    async with rig.agent() as agent:
        await wait_for_hosts(agent, rig.hosts, timeout=90)
        shot = await find_target(agent, "view_screenshot", "DXF")
        answer = await call(agent, "invoke_dynamic", {"id": shot["id"], "arguments": {"width": 321}})
        assert not answer.is_error, answer
        image = next(c for c in answer.content if c.type == "image")
        size = Image.open(io.BytesIO(base64.b64decode(image.data))).size
        assert size[0] == 321

    def shown() -> list[Any]:
        rows = [r for r in css(browser, "#call-rows tr") if "→ view_screenshot" in r.text]
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", rows[0])  # loaded when seen
        return [i for i in css(rows[0], "img.thumb") if i.get_attribute("naturalWidth") not in (None, "0")]

    thumbs = await until(shown)
    assert [int(thumbs[0].get_attribute("naturalWidth")), int(thumbs[0].get_attribute("naturalHeight"))] == [
        *size
    ]
    assert thumbs[0].get_attribute("alt").startswith("Picture 1 of the answer (image/png")
    row = next(r for r in css(browser, "#call-rows tr") if "→ view_screenshot" in r.text)
    press(browser, row)
    whole = await until(
        lambda: [
            i for i in css(browser, "#call-dialog-images img") if i.get_attribute("naturalWidth") == "321"
        ]
    )
    assert whole and '"length"' in browser.find_element("id", "call-dialog-body").text  # the log's line too
    press(browser, browser.find_element("id", "call-dialog-close"))


HIDE = """
Object.defineProperty(document, 'hidden', {value: arguments[0], configurable: true});
document.dispatchEvent(new Event('visibilitychange'));
"""


async def test_a_hidden_page_lets_go_of_its_live_stream_and_catches_up_when_shown(
    rig: Rig, browser: Any
) -> None:
    """Each open page held one of the six connections a browser opens to one address: with six
    tabs, a seventh never loaded and Approve waited in the browser, doing nothing for the person."""
    await until(lambda: browser.find_element("id", "live").text == "live", timeout=60)
    browser.execute_script(HIDE, True)
    await until(lambda: "paused" in browser.find_element("id", "live").text, timeout=20)
    async with rig.agent() as agent:
        await wait_for_hosts(agent, rig.hosts, timeout=90)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        assert not (await code(agent, dxf, "msp.add_circle((3, 3), 1)")).is_error
        call_id = await last_call_id(agent)
    await anyio.sleep(2)
    assert not [r for r in css(browser, "#call-rows tr") if call_id in r.text]  # not live while hidden
    browser.execute_script(HIDE, False)
    await until(lambda: browser.find_element("id", "live").text == "live", timeout=20)
    await until(lambda: [r for r in css(browser, "#call-rows tr") if call_id in r.text], timeout=20)


async def test_call_times_are_in_the_browsers_time_zone_as_the_other_times_are(
    rig: Rig, browser: Any
) -> None:
    """With the browser in New York, Calls showed the log's time (the machine's zone) while History
    and pictures showed local times: a call and its change did not match."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "America/New_York"})
    try:
        async with rig.agent() as agent:
            await wait_for_hosts(agent, rig.hosts, timeout=90)
            dxf = await find_target(agent, "execute_python_code", "DXF")
            assert not (await code(agent, dxf, "msp.add_circle((4, 4), 1)")).is_error
            call_id = await last_call_id(agent)
        rows = await until(lambda: [r for r in css(browser, "#call-rows tr") if call_id in r.text], 30)
        logged = rows[0].find_element("css selector", "td").get_attribute("title")
        shown = rows[0].find_element("css selector", "td").text
        there = datetime.fromisoformat(logged).astimezone(ZoneInfo("America/New_York"))
        assert shown.startswith(there.strftime("%H:%M:%S")), (shown, logged)
    finally:
        browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})
