"""`_meta` keys the daemon and hosts exchange beside the MCP protocol's own fields."""

from __future__ import annotations

OURS = "io.cadmcp/"
"""The prefix of every `_meta` key below: what cadmcp's hosts and daemon tell each other. A foreign
server's catalog and answers lose such keys (`cadmcp.foreign.proxy`): it cannot speak for cadmcp."""

HOST_STATE = "io.cadmcp/hostState"
"""On a host's `tools/list` result: what the host says about itself (`phase`, `documents`,
`activeDocument`); the daemon keeps it per host and shows it in `list_host_instances`."""

DOMAIN = "io.cadmcp/domain"
"""On a host's `tools/list` result: the app's search vocabulary, `{"names": [...], "terms": [...]}`
(what people call the app; words of its domain). Search uses it to tell apps apart."""

FALLBACK = "io.cadmcp/fallback"
"""On a tool: `["change"]`, `["query"]` or both: the host's general-purpose tool for changes
(questions) no dedicated capability covers; search ranks it first for those."""

KEYWORDS = "io.cadmcp/keywords"
"""On a tool, resource or resource template: words and phrases people use for it that its name,
title and description do not say (`["undo", "roll back"]`); search weighs them between title and
description."""

TASK_SUPPORT = "io.cadmcp/taskSupport"
"""On a tool: whether a call of it may run as a task (`forbidden`, `optional`, `required`), the
same values as MCP's `execution.taskSupport`, which the 2026-07-28 tool schema no longer carries;
hosts mirror a tool's `execution.taskSupport` here."""

NAVIGATES = "io.cadmcp/navigates"
"""On a tool: `true` when all a call of it changes is which documents the host has open and which
is active, never a document's content nor a file (`open_document`, `activate_document`). A policy
counts its calls as reads, so a profile or rule that holds back changes does not hold the agent
in one document. A foreign server cannot declare it: the proxy drops `io.cadmcp/` keys it sends."""

REQUIRED_ARGS = "io.cadmcp/requiredArgs"
"""On a resource template: the names of its query variables (`{?a,b}`) a read needs a value for
(a foreign prompt's required arguments); its other query variables may be left out."""

PREVIEW = "io.cadmcp/preview"
"""On a tool: `true` when a call of it can be previewed. On a `tools/call` request's `_meta`:
`{"dryRun": true}` runs the call as a preview (in the document's transaction, reported, rolled
back); `{"apply": "<before>:<after>"}` applies it only from the previewed revision and only if it
ends at the previewed one. The daemon sends these to show the person a change before they confirm
it and to apply exactly that change; the call's arguments stay the caller's own."""

ALIASES = "x-cadmcp-aliases"
"""In a tool's `inputSchema`, on a property with an `enum`: `{"alias": "value"}`, the values that
are other names of another (`isometric` of `axonometric`); a person's list of choices (the
dashboard's) leaves them out."""
