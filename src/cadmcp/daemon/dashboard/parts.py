"""What the dashboard needs of the daemon it runs in, and nothing more.

The daemon hands itself over as this protocol, so the dashboard reads its parts without
importing the daemon's server (the arrows run one way: the server imports the dashboard's door).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cadmcp.daemon.gateway import Gateway
    from cadmcp.daemon.hosts import HostDirectory
    from cadmcp.daemon.policy.gate import Gate
    from cadmcp.daemon.recentimages import RecentImages


class DaemonParts(Protocol):
    """The parts of a running daemon the page reads and acts through."""

    @property
    def directory(self) -> HostDirectory:
        """The hosts, their catalogs and links (the runtime directory is `directory.directory`)."""
        ...

    @property
    def gate(self) -> Gate:
        """The policy gate: pending approvals and checkpoints."""
        ...

    @property
    def gateway(self) -> Gateway | None:
        """The link to other machines, when one is configured."""
        ...

    @property
    def images(self) -> RecentImages:
        """The pictures of recent answers, by the key their call-log line names."""
        ...
