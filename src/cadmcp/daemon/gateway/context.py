"""What every part of the gateway works with, passed once instead of as four parameters each."""

from __future__ import annotations

from dataclasses import dataclass

from cadmcp.daemon.gateway.connection import Connection
from cadmcp.daemon.gateway.settings import Settings
from cadmcp.daemon.gateway.subjects import Subjects
from cadmcp.daemon.hosts import HostDirectory

__all__ = ["GatewayContext", "GatewayPart"]


@dataclass(frozen=True)
class GatewayContext:
    """The gateway connection, its settings, the subject names of the space and the host directory."""

    connection: Connection
    settings: Settings
    subjects: Subjects
    directory: HostDirectory


class GatewayPart:
    """A part of the gateway (mirror, registrar, responder): reads the shared context by name."""

    def __init__(self, context: GatewayContext) -> None:
        self.context = context

    @property
    def connection(self) -> Connection:
        return self.context.connection

    @property
    def settings(self) -> Settings:
        return self.context.settings

    @property
    def subjects(self) -> Subjects:
        return self.context.subjects

    @property
    def directory(self) -> HostDirectory:
        return self.context.directory
