"""The daemon's link to other machines over a NATS gateway (docs/machines.md).

Public API: `Settings` and `load_settings` (command line, environment, config file),
`Gateway` (connect, register this machine, mirror the others, route calls to them),
`RemoteLink` (a host on another machine behind the same interface as a local link).
Nothing here imports a host adapter; `nats` is imported only once a gateway connects.
"""

from cadmcp.daemon.gateway.settings import Settings
from cadmcp.daemon.gateway.settings import load as load_settings

__all__ = ["Gateway", "RemoteLink", "Settings", "load_settings"]


def __getattr__(name: str) -> object:
    # the running parts load on first use, so reading settings stays cheap
    if name == "Gateway":
        from cadmcp.daemon.gateway.service import Gateway

        return Gateway
    if name == "RemoteLink":
        from cadmcp.daemon.gateway.remotelink import RemoteLink

        return RemoteLink
    raise AttributeError(name)
