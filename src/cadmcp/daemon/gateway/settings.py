"""Gateway settings: where the NATS server is, how to authenticate, who this machine is.

Each setting comes from the command line, else an environment variable, else the `gateway`
section of the cadmcp configuration file (the launch configuration, `hosts.toml` or
`hosts.json`), else its default. Secrets (password, token) are kept apart so every message
about the gateway can be scrubbed of them (`Settings.redact`).
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from cadmcp.daemon.errors import DaemonError

TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a space or machine id may look like: one NATS subject token."""
SCHEMES = ("nats", "tls")


@dataclass(frozen=True)
class Option:
    """One setting: its attribute, command-line flag, environment variable and config key."""

    attr: str
    flag: str
    env: str
    key: str
    kind: type = str
    secret: bool = False


OPTIONS: tuple[Option, ...] = (
    Option("url", "gateway", "CADMCP_GATEWAY", "url"),
    Option("creds", "creds", "CADMCP_GATEWAY_CREDS", "creds"),
    Option("nkey", "nkey", "CADMCP_GATEWAY_NKEY", "nkeySeed"),
    Option("user", "user", "CADMCP_GATEWAY_USER", "user"),
    Option("password", "password", "CADMCP_GATEWAY_PASSWORD", "password", secret=True),
    Option("token", "token", "CADMCP_GATEWAY_TOKEN", "token", secret=True),
    Option("tls_ca", "tls_ca", "CADMCP_GATEWAY_TLS_CA", "tlsCa"),
    Option("tls_cert", "tls_cert", "CADMCP_GATEWAY_TLS_CERT", "tlsCert"),
    Option("tls_key", "tls_key", "CADMCP_GATEWAY_TLS_KEY", "tlsKey"),
    Option("space", "space", "CADMCP_GATEWAY_SPACE", "space"),
    Option("machine_id", "machine_id", "CADMCP_MACHINE_ID", "machineId"),
    Option("machine_name", "machine_name", "CADMCP_MACHINE_NAME", "machineName"),
    Option("read_only", "read_only", "CADMCP_GATEWAY_READ_ONLY", "readOnly", bool),
    Option("remote_python", "remote_python", "CADMCP_GATEWAY_REMOTE_PYTHON", "remotePython", bool),
    Option("heartbeat", "heartbeat", "CADMCP_GATEWAY_HEARTBEAT", "heartbeatSeconds", float),
    Option("ttl", "ttl", "CADMCP_GATEWAY_TTL", "ttlSeconds", float),
    Option("forget", "forget", "CADMCP_GATEWAY_FORGET", "forgetSeconds", float),
    Option("call_timeout", "call_timeout", "CADMCP_GATEWAY_CALL_TIMEOUT", "callTimeoutSeconds", float),
)


@dataclass(frozen=True)
class Settings:
    """Everything the gateway needs; `url` empty means no gateway is configured."""

    url: str = field(default="", repr=False)  # may hold credentials: shown as display_url
    creds: str | None = None
    nkey: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    space: str = ""
    machine_id: str = ""
    machine_name: str = ""
    read_only: bool = False
    remote_python: bool = True
    heartbeat: float = 5.0
    ttl: float = 0.0
    forget: float = 300.0
    call_timeout: float = 3600.0
    """The longest a call to another machine may run when the caller sets no timeout."""
    source: str = "defaults"

    @property
    def configured(self) -> bool:
        return bool(self.url)

    @property
    def servers(self) -> list[str]:
        """The server URLs as given (credentials in them included: only for the client)."""
        return [u.strip() for u in self.url.split(",") if u.strip()]

    @property
    def display_url(self) -> str:
        """The server URLs without any user or password in them, safe to show."""
        return ",".join(strip_userinfo(u) for u in self.servers)

    @property
    def offline_after(self) -> float:
        """Seconds without a heartbeat after which a machine counts as offline."""
        return self.ttl if self.ttl > 0 else 3 * self.heartbeat

    def secrets(self) -> list[str]:
        """Every secret string these settings hold (passwords and tokens, in URLs too)."""
        found = [s for s in (self.password, self.token) if s]
        for url in self.servers:
            parts = urlsplit(url)
            found.extend(s for s in (parts.password, parts.username if not parts.password else None) if s)
        return sorted(set(found), key=len, reverse=True)

    def redact(self, text: str) -> str:
        """`text` with every secret of these settings replaced by `***`."""
        for secret in self.secrets():
            text = text.replace(secret, "***")
        return text


def strip_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if not parts.hostname:
        return url
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _config_error(where: str, problem: str) -> DaemonError:
    return DaemonError(
        "config_error",
        f"The gateway settings are invalid ({where}): {problem}. See docs/machines.md for the settings.",
    )


def _convert(option: Option, value: Any, where: str) -> Any:
    if option.kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise _config_error(where, f"{option.key} must be true or false")
    if option.kind is float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise _config_error(where, f"{option.key} must be a number of seconds") from None
        if not 0 < number <= 86400:
            raise _config_error(where, f"{option.key} must be between 0 and 86400 seconds")
        return number
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise _config_error(where, f"{option.key} must be a string")
    return str(value)


def config_section(path: Path | None) -> dict[str, Any]:
    """The `gateway` section of a configuration file ({} when there is none)."""
    if path is None or not path.is_file():
        return {}
    from cadmcp.daemon.launching import parse_config_file

    try:
        data = parse_config_file(path)
    except (OSError, ValueError):
        return {}  # launch_host reports a file it cannot read; the daemon still starts
    section = data.get("gateway") if isinstance(data, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise _config_error(str(path), "the gateway section must be a table/object")
    known = {o.key for o in OPTIONS}
    unknown = sorted(set(section) - known)
    if unknown:
        import difflib

        meant = {k: m[0] for k in unknown if (m := difflib.get_close_matches(k, known, n=1, cutoff=0.6))}
        hint = "".join(f"; did you mean {m!r} for {k!r}?" for k, m in meant.items())
        raise _config_error(str(path), f"unknown key(s) {unknown}{hint}; known: {sorted(known)}")
    return section


def load(
    cli: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_path: Path | None = None,
) -> Settings:
    """Settings from the command line, then the environment, then the config file's `gateway` section."""
    cli = cli or {}
    env = os.environ if env is None else env
    if config_path is None:
        from cadmcp.daemon.launching import config_path as launch_config_path

        config_path = launch_config_path()
    section = config_section(config_path)
    values: dict[str, Any] = {}
    sources: set[str] = set()
    for option in OPTIONS:
        if cli.get(option.flag) is not None:
            values[option.attr] = _convert(option, cli[option.flag], f"--{option.flag.replace('_', '-')}")
            sources.add("command line")
        elif env.get(option.env):
            values[option.attr] = _convert(option, env[option.env], option.env)
            sources.add("environment")
        elif option.key in section:
            values[option.attr] = _convert(option, section[option.key], str(config_path))
            sources.add(str(config_path))
    settings = Settings(**values, source=", ".join(sorted(sources)) or "defaults")
    return _validated(settings)


def _validated(settings: Settings) -> Settings:
    changes: dict[str, Any] = {}
    for url in settings.servers:
        parts = urlsplit(url if "://" in url else f"nats://{url}")
        if parts.scheme not in SCHEMES or not parts.hostname:
            raise _config_error(
                "url",
                f"{strip_userinfo(url)!r} is not a server URL; use nats://HOST:4222 or tls://HOST:4222",
            )
    space = settings.space or _default_space()
    if not TOKEN_RE.match(space):
        raise _config_error("space", "a space is 1-64 letters, digits, '-' or '_'")
    changes["space"] = space
    machine_id = settings.machine_id or system_machine_id()
    if not TOKEN_RE.match(machine_id):
        raise _config_error("machineId", "a machine id is 1-64 letters, digits, '-' or '_'")
    changes["machine_id"] = machine_id
    changes["machine_name"] = (settings.machine_name or socket.gethostname())[:120]
    for option in (o for o in OPTIONS if o.attr in ("creds", "nkey", "tls_ca", "tls_cert", "tls_key")):
        value = getattr(settings, option.attr)
        if value:
            path = Path(value).expanduser()
            if not path.is_file():  # named as the person writes it: the key, or its variable or flag
                where = f"{option.key} / {option.env} / --{option.flag.replace('_', '-')}"
                raise _config_error(where, f"the file {path} does not exist")
            changes[option.attr] = str(path)
    if settings.ttl and settings.ttl <= settings.heartbeat:
        raise _config_error("ttlSeconds", "it must be longer than heartbeatSeconds")
    return Settings(**{**{f.name: getattr(settings, f.name) for f in fields(settings)}, **changes})


def _default_space() -> str:
    """The OS user name, made into a subject token."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name (some containers)
        user = "default"
    return re.sub(r"[^A-Za-z0-9_-]", "_", user)[:64] or "default"


def system_machine_id() -> str:
    """This machine's own stable id (the one the daemon keys local hosts with)."""
    from cadmcp.daemon.hosts import machine_id

    return machine_id()


def add_arguments(parser: Any) -> None:
    """The gateway's command-line options, on an argparse (sub)parser."""
    group = parser.add_argument_group("gateway (other machines, docs/machines.md)")
    group.add_argument(
        "--gateway", metavar="URL", help="NATS server(s) to join, e.g. nats://HOST:4222 or tls://..."
    )
    group.add_argument("--creds", metavar="FILE", help="NATS credentials file (user JWT and nkey seed)")
    group.add_argument("--nkey", metavar="FILE", help="NATS nkey seed file")
    group.add_argument("--user", help="NATS user name")
    group.add_argument("--password", help="NATS password (prefer CADMCP_GATEWAY_PASSWORD: argv is visible)")
    group.add_argument("--token", help="NATS token (prefer CADMCP_GATEWAY_TOKEN)")
    group.add_argument("--tls-ca", metavar="FILE", help="CA certificate(s) to trust for tls:// servers")
    group.add_argument("--tls-cert", metavar="FILE", help="client certificate for TLS")
    group.add_argument("--tls-key", metavar="FILE", help="client certificate key for TLS")
    group.add_argument(
        "--space", help="the subject space shared with your machines (default: your user name)"
    )
    group.add_argument(
        "--machine-id", help="this machine's id on the gateway (default: the system machine id)"
    )
    group.add_argument("--machine-name", help="this machine's display name (default: the host name)")
    group.add_argument(
        "--read-only",
        action="store_const",
        const=True,
        default=None,
        help="take only reads from other machines",
    )
    group.add_argument(
        "--no-remote-python",
        dest="remote_python",
        action="store_const",
        const=False,
        default=None,
        help="refuse execute_python_code from other machines",
    )
    group.add_argument("--heartbeat", type=float, metavar="SECONDS", help="seconds between heartbeats (5)")
    group.add_argument(
        "--ttl", type=float, metavar="SECONDS", help="seconds without a heartbeat to go offline"
    )
    group.add_argument(
        "--forget", type=float, metavar="SECONDS", help="seconds an offline machine stays listed"
    )
    group.add_argument(
        "--call-timeout", type=float, metavar="SECONDS", help="longest a call to another machine runs (3600)"
    )
    group.add_argument(
        "--serve",
        action="store_true",
        help="run without an MCP client: keep this machine registered and serving (a user service)",
    )
