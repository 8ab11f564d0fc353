"""NATS subject names: everything of one space lives under `cadmcp.<space>.>`.

That single prefix is what the server's permissions grant a user (or what an account
isolates), so a daemon of another space can neither reach nor overhear these subjects:

    cadmcp.<space>.presence.<machineId>       registrations, heartbeats, goodbyes
    cadmcp.<space>.discover                   "who is there?" from a daemon that just joined
    cadmcp.<space>.m.<machineId>.<operation>  requests to one machine (call, catalog, launch, fileinfo,
                                              ping, cancel, policy)
    cadmcp.<space>.inbox.<machineId>.<nonce>.<n>  replies to one daemon
"""

from __future__ import annotations

from dataclasses import dataclass

OPERATIONS = ("call", "catalog", "launch", "fileinfo", "ping", "cancel", "policy")


@dataclass(frozen=True)
class Subjects:
    """The subjects of one space."""

    space: str

    @property
    def prefix(self) -> str:
        return f"cadmcp.{self.space}"

    @property
    def everything(self) -> str:
        """The one wildcard a user of this space needs permission for."""
        return f"{self.prefix}.>"

    @property
    def discover(self) -> str:
        return f"{self.prefix}.discover"

    @property
    def all_presence(self) -> str:
        return f"{self.prefix}.presence.*"

    def presence(self, machine_id: str) -> str:
        return f"{self.prefix}.presence.{machine_id}"

    def machine(self, machine_id: str, operation: str) -> str:
        return f"{self.prefix}.m.{machine_id}.{operation}"

    def inbox(self, machine_id: str, nonce: str) -> str:
        return f"{self.prefix}.inbox.{machine_id}.{nonce}"
