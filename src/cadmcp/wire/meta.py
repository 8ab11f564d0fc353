"""`_meta` keys the daemon and hosts exchange beside the MCP protocol's own fields."""

from __future__ import annotations

HOST_STATE = "io.cadmcp/hostState"
"""On a host's `tools/list` result: what the host says about itself (`phase`, `documents`,
`activeDocument`); the daemon keeps it per host and shows it in `list_host_instances`."""
