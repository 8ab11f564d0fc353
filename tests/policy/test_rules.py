"""The policy engine on its own: rules from the configuration file, profiles, first match wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.policy import Policy, Subject, load_policy, subject_for
from cadmcp.daemon.policy.cli import show
from cadmcp.daemon.policy.envelopes import denied
from cadmcp.daemon.policy.rules import declared
from cadmcp.wire.meta import NAVIGATES


def _entry(host_app: str = "DXF", path: str = "/projects/a/plan.dxf") -> HostEntry:
    tools = [
        {"name": "execute_python_code", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": False, "destructiveHint": True}},
        {"name": "list_documents", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
        {"name": "open_document", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": False, "destructiveHint": False}, "_meta": {NAVIGATES: True}},
        {"name": "layer_tool", "inputSchema": {"type": "object"}},
    ]  # fmt: skip
    return HostEntry.build(
        HostKey("m1", 42),
        host_app=host_app,
        version="1",
        endpoint="",
        protocol_version="",
        server_name="",
        tools=tools,
        resources=[{"uri": "dxf://model/context", "name": "context"}],
        templates=[],
        state={"documents": [{"title": "plan.dxf", "path": path, "active": True, "modified": False}]},
    )


def _cap(entry: HostEntry, target: str) -> Subject:
    cap = next(c for c in entry.capabilities if c.target == target)
    return subject_for(entry, cap, machine_name="ws-1")


def _write(tmp_path: Path, policy: object) -> Path:
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps({"policy": policy}))
    return path


def test_what_a_capability_declares_decides_whether_it_is_a_read() -> None:
    assert declared("tool", {}) == (False, True)  # nothing declared: a change, destructive
    assert declared("tool", {"annotations": {"readOnlyHint": True}}) == (True, False)
    assert declared("tool", {"annotations": {"destructiveHint": False}}) == (False, False)
    assert declared("tool", {"_meta": {NAVIGATES: True}, "annotations": {"readOnlyHint": False}}) == (
        True,
        False,
    )
    assert declared("resource", {}) == (True, False)
    assert declared("resource_template", {"annotations": {"readOnlyHint": False}}) == (True, False)


def test_the_default_keeps_todays_behaviour(tmp_path: Path) -> None:
    policy = load_policy(tmp_path / "missing.json", env={})
    entry = _entry()
    assert policy.profile == "trusted" and policy.is_trusting
    for cap in entry.capabilities:
        assert policy.decide(subject_for(entry, cap)).verdict == "allow"


def test_profiles_split_reads_from_changes() -> None:
    entry = _entry()
    confirm = Policy("confirm-changes")
    read_only = Policy("read-only")
    assert confirm.decide(_cap(entry, "list_documents")).verdict == "allow"
    assert confirm.decide(_cap(entry, "dxf://model/context")).verdict == "allow"
    assert confirm.decide(_cap(entry, "layer_tool")).verdict == "confirm"  # declares nothing
    assert read_only.decide(_cap(entry, "execute_python_code")).verdict == "deny"
    decision = read_only.decide(_cap(entry, "layer_tool"))
    assert decision.rule.name == "changes" and decision.rule.origin == "profile read-only"
    assert "it may change something (it does not declare readOnlyHint)" in decision.why
    declares_false = read_only.decide(_cap(entry, "execute_python_code")).why
    assert "it may change something (it declares readOnlyHint false)" in declares_false, declares_false
    opening = read_only.decide(_cap(entry, "open_document"))  # opens, changes no document
    assert opening.verdict == "allow" and "it only opens or switches documents" in opening.why
    assert not confirm.is_trusting


def test_rules_match_by_machine_host_document_name_and_annotations_first_match_wins(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "profile": "trusted",
            "confirmTimeoutSeconds": 30,
            "rules": [
                {
                    "name": "render farm reads only",
                    "decision": "deny",
                    "machine": "render-*",
                    "readOnly": False,
                },
                {"name": "client files", "decision": "confirm", "document": "/projects/client/**"},
                {
                    "name": "scripts on IFC",
                    "decision": "confirm",
                    "hostApp": "ifc",
                    "capability": "execute_*",
                },
                {"name": "no deletes", "decision": "deny", "destructive": True, "caller": "remote"},
                {"name": "by id", "decision": "deny", "capability": ["cAAAAAAAAAAAA"]},
            ],
        },
    )
    policy = load_policy(path, env={})
    assert policy.confirm_timeout == 30 and policy.source == str(path)
    dxf, ifc = _entry(), _entry("IFC")
    assert policy.decide(_cap(dxf, "execute_python_code")).verdict == "allow"
    decision = policy.decide(_cap(ifc, "execute_python_code"))
    assert (decision.verdict, decision.rule.name) == ("confirm", "scripts on IFC")
    assert (
        "'execute_python_code' matches ['execute_*']" in decision.why
        and "'IFC' matches ['ifc']" in decision.why
    )
    client = _entry(path="/projects/client/x/plan.dxf")
    assert policy.decide(_cap(client, "list_documents")).rule.name == "client files"
    farm = Subject("open_document", machine_name="render-3", read_only=False, destructive=False)
    assert policy.decide(farm).rule.name == "render farm reads only"
    remote = Subject("layer_tool", caller="remote")
    assert policy.decide(remote).rule.name == "no deletes"
    said = str(denied(policy.decide(remote), remote))  # sent to the caller's machine: where to look
    assert "`cadmcp policy show layer_tool --caller remote` on that machine" in said, said
    assert policy.decide(Subject("layer_tool")).verdict == "allow"  # the same call, locally
    cap = next(c for c in dxf.capabilities if c.target == "layer_tool")
    by_id = load_policy(_write(tmp_path, {"rules": [{"decision": "deny", "capability": cap.id}]}), env={})
    decision = by_id.decide(subject_for(dxf, cap))
    assert (decision.verdict, decision.rule.name) == ("deny", "policy.rules[0]")


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ({"profile": "paranoid"}, "profile must be one of"),
        ({"rules": [{"decision": "maybe"}]}, "decision must be one of"),
        ({"rules": [{"decision": "deny", "hostApps": "DXF"}]}, "unknown key(s) ['hostApps']"),
        ({"rules": [{"decision": "deny", "readOnly": "yes"}]}, "readOnly must be true or false"),
        ({"rules": [{"decision": "deny", "capability": []}]}, "capability must be a pattern"),
        ({"rules": [{"decision": "deny", "kind": "prompt"}]}, "kind must be among"),
        ({"confirmTimeoutSeconds": 0}, "confirmTimeoutSeconds must be between"),
        ({"rules": {"decision": "deny"}}, "rules must be a list"),
        ({"rules": [{"decision": "allow"}] * 501}, "at most 500 rules"),
        ({"mode": "strict"}, "unknown key(s) ['mode']"),
    ],
)
def test_a_wrong_policy_section_says_where_and_how_to_fix_it(
    tmp_path: Path, section: object, words: str
) -> None:
    path = _write(tmp_path, section)
    with pytest.raises(DaemonError) as caught:
        load_policy(path, env={})
    assert caught.value.type == "config_error"
    assert words in caught.value.message and str(path) in caught.value.message
    assert "Example:" in caught.value.message


def test_the_confirmation_time_can_be_set_from_the_environment(tmp_path: Path) -> None:
    path = _write(tmp_path, {"profile": "confirm-changes"})
    assert load_policy(path, env={"CADMCP_CONFIRM_TIMEOUT": "2.5"}).confirm_timeout == 2.5
    with pytest.raises(DaemonError, match="CADMCP_CONFIRM_TIMEOUT"):
        load_policy(path, env={"CADMCP_CONFIRM_TIMEOUT": "soon"})


def test_policy_show_names_the_deciding_rule_for_each_matching_capability() -> None:
    policy = Policy("confirm-changes")
    lines = show(policy, "execute_*", [_entry()])
    assert lines[0].startswith("policy: profile confirm-changes from defaults")
    assert len(lines) == 2
    assert lines[1].startswith("confirm  DXF 1 pid 42: execute_python_code (tool, change, destructive)")
    assert "rule 'changes' (profile confirm-changes)" in lines[1]
    entry = _entry()
    by_id = show(policy, entry.capabilities[1].id, [entry])
    assert "allow    DXF 1 pid 42: list_documents (tool, read)" in by_id[1]
    unknown = show(Policy("read-only"), "explode_all", [])
    assert "no running host offers 'explode_all'" in unknown[1] and unknown[2].startswith("deny")


def test_the_person_asked_sees_first_the_kinds_of_object_they_would_name() -> None:
    """Deleting all furniture of a Revit model was put to the person as "deletes 2348 (1056
    IfcPropertySingleValue, 253 IfcPropertySet, ...)": the 61 pieces of furniture were never named,
    while the agent's own preview named them first. Both now rank the kinds alike."""
    from cadmcp.daemon.policy.gate import question
    from cadmcp.host.builtins.preview import Difference

    before = {f"#{n}": ("IfcPropertySingleValue", "", f"d{n}") for n in range(1056)}
    before |= {f"#p{n}": ("IfcPropertySet", "", f"p{n}") for n in range(253)}
    before |= {f"#f{n}": ("IfcFurnishingElement", f"Chair {n}", f"f{n}") for n in range(61)}
    before |= {f"#o{n}": ("IfcOpeningElement", f"Opening {n}", f"o{n}") for n in range(10)}
    before |= {f"#k{n}": (f"IfcKind{n}", "", f"k{n}") for n in range(8)}
    difference = Difference.between(before, {})
    report = difference.report()
    assert list(report["deleted"]["byKind"])[:2] == ["IfcFurnishingElement", "IfcOpeningElement"]
    said = difference.sentence()
    assert said.startswith("creates nothing; modifies nothing; deletes 1388 (61 IfcFurnishingElement"), said
    subject = Subject("execute_python_code", host_app="IFC", version="0.8")
    decision = Policy("confirm-changes").decide(subject)
    preview = {**report, "previewed": "a:b", "pictures": ["x", "y"]}
    message = question(decision, subject, {"code": "delete furniture"}, preview)["message"]
    named = "deletes 1388 (61 IfcFurnishingElement, 10 IfcOpeningElement, 1056 IfcPropertySingleValue"
    assert named in message, message
    assert "1 IfcKind1, 6 more)" in message  # the kinds past the sixth are counted, not dropped
    assert "pictures" not in message  # a prompt carries text only: it does not promise pictures
