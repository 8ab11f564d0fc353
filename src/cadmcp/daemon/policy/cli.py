"""`cadmcp policy show|approvals|answer|checkpoints|revert`: the policy, the queue, reverting.

`show [PATTERN]` lists the capabilities whose name, URI or id matches PATTERN (a glob; all
when omitted), each with the decision, the rule that makes it and why. A running daemon
answers it from its live configuration, over every capability it knows (other machines'
through the gateway, its own); with no daemon running, the configuration file is read and the
hosts of this machine are asked directly. The first line says which. A pattern no running
host offers is decided as a tool that declares nothing (a change). `approvals` lists the
confirmations waiting in every running daemon;
`answer ID accept|decline` answers one. `checkpoints` lists what agents changed on this
machine (every daemon keeps the machine's checkpoints, so one answers for all); `revert CALL
[--since] [--save]` reverts that call (or it and every later one through the same daemon) on every host
it touched, or says who changed the document since and stops.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import anyio

from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.policy.engine import load
from cadmcp.daemon.policy.explain import show

LIST_TIMEOUT = 5.0
OUTCOME_WAIT = 60.0
"""Seconds `policy answer` waits, after a yes, to say what the call did."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cadmcp policy", description="The person's policy over agents' calls."
    )
    sub = parser.add_subparsers(dest="action", required=True)
    show = sub.add_parser("show", help="the rule deciding each capability, and why")
    show.add_argument(
        "pattern", nargs="?", default="*", help="capability name, URI, id or glob (default: all)"
    )
    show.add_argument(
        "--caller", choices=["local", "remote"], default="local", help="decide as for this caller"
    )
    sub.add_parser("approvals", help="confirmations waiting for an answer")
    answer = sub.add_parser("answer", help="answer a waiting confirmation")
    answer.add_argument("approval_id")
    answer.add_argument("answer", choices=["accept", "decline"])
    listing = sub.add_parser("checkpoints", help="what agents changed through the running daemons")
    listing.add_argument(
        "--gone",
        action="store_true",
        help="also list the calls on hosts no longer running (no revert reaches them)",
    )
    revert = sub.add_parser("revert", help="revert a call (or everything since it) on every host it touched")
    revert.add_argument("call_id", help="a callId from `cadmcp policy checkpoints` (like 4242-1)")
    revert.add_argument("--since", action="store_true", help="that call and every later one")
    revert.add_argument(
        "--save", action="store_true", help="then save each document whose file still holds what went back"
    )
    return parser


async def _entries() -> list[HostEntry]:
    """The catalogs of the hosts running on this machine (each asked once, bounded in time)."""
    from cadmcp.daemon.hostlink import HostLink
    from cadmcp.daemon.hosts import machine_id
    from cadmcp.wire import endpoints, sockets
    from cadmcp.wire.meta import HOST_STATE

    found: list[HostEntry] = []
    me = machine_id()

    async def one(ep: endpoints.Endpoint) -> None:
        with anyio.move_on_after(LIST_TIMEOUT):
            try:
                async with (
                    sockets.connect(ep.path, timeout=LIST_TIMEOUT) as (read, write),
                    HostLink(read, write) as link,
                ):
                    version = await link.connect()
                    tools, meta = await link.list_all("tools/list", "tools", LIST_TIMEOUT)
                    resources, _ = await link.list_all("resources/list", "resources", LIST_TIMEOUT)
                    templates, _ = await link.list_all(
                        "resources/templates/list", "resourceTemplates", LIST_TIMEOUT
                    )
            except Exception as exc:  # a host that cannot be asked is left out, and said so
                print(
                    f"(the {ep.host_app} host pid {ep.pid} did not answer: {type(exc).__name__})",
                    file=sys.stderr,
                )
                return
            state = meta.get(HOST_STATE)
            found.append(
                HostEntry.build(
                    HostKey(me, ep.pid),
                    host_app=ep.host_app,
                    version=ep.version,
                    endpoint=str(ep.path),
                    protocol_version=version,
                    server_name="",
                    tools=tools,
                    resources=resources,
                    templates=templates,
                    state=state if isinstance(state, dict) else {},
                )
            )

    async with anyio.create_task_group() as tg:
        for ep in endpoints.list_endpoints():
            tg.start_soon(one, ep)
    return sorted(found, key=lambda e: (e.host_app, e.version, e.key.pid))


def _print_pending(answers: list[dict[str, Any]]) -> int:
    count = 0
    for answer in answers:
        for item in answer.get("pending") or []:
            count += 1
            print(f"[{item['approvalId']}] daemon pid {answer.get('pid')}, {item['secondsLeft']} s left")
            print("    " + str(item.get("message", "")).replace("\n", "\n    "))
    if not count:
        print("no confirmation is waiting")
    return 0


async def _doors(request: dict[str, Any], first: bool = False) -> list[dict[str, Any]]:
    """The answers of every running daemon to `request` (with `first`, of the first that answers)."""
    from cadmcp.daemon.policy import control
    from cadmcp.wire.endpoints import runtime_dir

    answers = []
    for path in control.doors(runtime_dir()):
        try:
            answers.append(await control.ask(path, request))
        except (OSError, TimeoutError, ValueError):
            continue  # a daemon that exited left its socket behind
        if first:
            break
    return answers


def main(argv: Sequence[str]) -> int:
    """Entry point of `cadmcp policy ...`."""
    args = _parser().parse_args(list(argv))
    if args.action == "approvals":
        return _print_pending(anyio.run(_doors, {"op": "list"}))
    if args.action == "checkpoints":
        count = 0
        answers = anyio.run(_doors, {"op": "checkpoints"}, True)
        if not answers:  # no daemon runs: the call logs hold the machine's checkpoints all the same
            from cadmcp.daemon.checkpoints import Checkpoints
            from cadmcp.userdirs import log_dir

            answers = [{"checkpoints": anyio.run(Checkpoints(log_dir()).listing)}]
            print("no daemon is running: the checkpoints its call logs hold (reverting one needs a daemon)")
        gone = 0
        for answer in answers:
            for c in answer.get("checkpoints") or []:
                count += 1
                state = " (reverted)" if c["reverted"] else ""
                if c.get("hostRunning") is False:
                    gone += 1
                    if not args.gone:
                        continue
                    state += " (its host is gone: it cannot be reverted)"
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(c["at"])) if c.get("at") else "?"
                by = f"{c['client']}, " if c.get("client") else ""
                print(
                    f"{c['callId']}  {when}  {by}daemon pid {c.get('daemonPid')}  {c['host']}  "
                    f"{c['document']}: {c['step']}{state}"
                )
        if not count:
            print("no agent change is recorded")
        elif gone and not args.gone:
            print(
                f"{gone} call(s) on hosts no longer running, which no revert reaches, are not listed (--gone)"
            )
        return 0
    if args.action == "revert":
        request = {"op": "revert", "callId": args.call_id, "since": args.since, "save": args.save}
        answers = anyio.run(_doors, request, True)  # one daemon reverts for the machine
        done = next((a for a in answers if a.get("ok")), None)
        if done is None:
            errors = {str(a.get("error")) for a in answers} or {
                "no daemon is running (a revert is done by one): start one with `cadmcp daemon --http` "
                "(or your AI client starts one), then revert again"
            }
            print(f"cadmcp policy revert: {'; '.join(sorted(errors))}", file=sys.stderr)
            return 1
        for undone in done["undone"]:
            document = undone.get("savedAs") or undone["document"]
            went = "" if done.get("savedOnly") else f" went back {undone['steps']} step(s)"
            print(f"{undone['host']}: {document}{went}")
            for said in (undone.get("note"), undone.get("saveError")):
                if said:
                    print(f"  {said}")
        if done["reverted"]:
            print(f"reverted {', '.join(done['reverted'])}")
        return 1 if any(u.get("saveError") for u in done["undone"]) else 0
    if args.action == "answer":
        request = {
            "op": "answer",
            "approvalId": args.approval_id,
            "answer": args.answer,
            "by": "cadmcp policy answer",
            "wait": OUTCOME_WAIT,
        }
        answers = anyio.run(_doors, request)
        done = next((a for a in answers if a.get("ok")), None)
        if done is None:
            late = [a for a in answers if a.get("late")]  # the daemon that asked says what happened
            errors = {str(a.get("error")) for a in late or answers} or {
                "no daemon with an approval queue is running (a call that waited for a yes in a daemon "
                "that stopped did not run)"
            }
            print(f"cadmcp policy answer: {'; '.join(sorted(errors))}", file=sys.stderr)
            return 1
        if args.answer == "decline":
            print(f"{args.approval_id}: declined; nothing ran")
            return 0
        if "outcome" not in done:  # a call from another machine: its answer goes back there
            print(
                f"{args.approval_id}: accepted; the call runs now, its answer going to the agent that asked"
            )
            return 0
        outcome = done.get("outcome") or (
            f"still running after {OUTCOME_WAIT:g} s; its answer goes to the agent (the call log and "
            "`cadmcp dashboard` show it)"
        )
        print(f"{args.approval_id}: accepted; the call {outcome}")
        return 1 if str(outcome).startswith(("failed", "stopped", "did not run")) else 0
    live = [
        a
        for a in anyio.run(_doors, {"op": "show", "pattern": args.pattern, "caller": args.caller})
        if a.get("ok")
    ]
    if live:
        others = f" ({len(live) - 1} other daemon(s) run too)" if len(live) > 1 else ""
        print(f"from the running daemon pid {live[0].get('pid')}{others}: its live configuration")
        for line in live[0].get("lines") or []:
            print(line)
        for machine in live[0].get("machines") or []:
            print(
                f"machine {machine.get('machine')} ({machine.get('machineId')}), by its own policy "
                "for calls from other machines:"
            )
            for line in machine.get("lines") or [f"(no answer: {machine.get('error')})"]:
                print(f"  {line}".replace("\n", "\n  "))
        return 0
    print("no daemon runs: read from the configuration file, hosts of this machine asked directly")
    try:
        policy = load()
    except DaemonError as exc:
        print(f"cadmcp policy: {exc.message}", file=sys.stderr)
        return 2
    for line in show(policy, args.pattern, anyio.run(_entries), args.caller):
        print(line)
    return 0
