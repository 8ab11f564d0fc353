"""`cadmcp dashboard`: print a one-time login link to this machine's dashboard (and open it if a
browser is at hand).

The link comes from a running daemon through its door in the runtime directory (only this user
reaches it). The daemon chosen is the one already serving the page, else one serving HTTP
(`cadmcp daemon --http`), else the one registering this machine with the gateway, else any.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

NO_DAEMON = (
    "no cadmcp daemon is running for this user. Start one (an AI client does, or run "
    "`cadmcp daemon --http`), then run `cadmcp dashboard` again."
)


def _rank(status: dict[str, Any]) -> tuple[int, int, int]:
    return (not status.get("serving"), not status.get("http"), not status.get("registers"))


async def login_link() -> tuple[str | None, str]:
    """(the link, '') from the best daemon, or (None, why not)."""
    from cadmcp.daemon.policy import control
    from cadmcp.wire.endpoints import runtime_dir

    statuses = []
    for door in control.doors(runtime_dir()):
        try:
            answer = await control.ask(door, {"op": "dashboard", "status": True}, timeout=5)
        except (OSError, TimeoutError, ValueError):
            continue  # a daemon that exited left its socket behind
        if answer.get("ok"):
            statuses.append((door, answer))
    if not statuses:
        return None, NO_DAEMON
    problems = []
    for door, _ in sorted(statuses, key=lambda s: _rank(s[1])):
        try:
            answer = await control.ask(door, {"op": "dashboard"}, timeout=15)
        except (OSError, TimeoutError, ValueError) as exc:
            problems.append(f"{door.name}: {type(exc).__name__}")
            continue
        if answer.get("ok") and isinstance(answer.get("url"), str):
            return answer["url"], ""
        problems.append(str(answer.get("error")))
    return None, "; ".join(problems)


def main(*, open_browser: bool = True) -> int:
    """Entry point of `cadmcp dashboard`."""
    url, problem = anyio.run(login_link)
    if url is None:
        print(f"cadmcp dashboard: {problem}", file=sys.stderr)
        return 1
    print(f"cadmcp dashboard: open {url}")
    print("cadmcp dashboard: the link works once, for two minutes; run `cadmcp dashboard` again for another")
    sys.stdout.flush()
    if open_browser:
        _open(url)
    return 0


def _open(url: str) -> None:
    """Open the link in a browser when one is at hand; none (a server, a test): nothing happens."""
    import webbrowser

    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return
    if type(browser).__name__ in ("GenericBrowser", "BackgroundBrowser") and not _graphical():
        return  # a text browser would take over the terminal
    browser.open(url)


def _graphical() -> bool:
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform != "linux")
