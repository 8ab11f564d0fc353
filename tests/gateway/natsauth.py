"""NATS decentralised auth for tests: operator, account and user JWTs signed with nkeys,
and `.creds` files, as `nsc` would make them (JWT v2 claims)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nkeys

NO_LIMITS = {"subs": -1, "data": -1, "payload": -1}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


@dataclass
class Identity:
    """An nkey pair: `public` names it, `seed` signs for it."""

    public: str
    seed: bytes

    @classmethod
    def new(cls, prefix: int) -> Identity:
        seed = nkeys.encode_seed(os.urandom(32), prefix)
        return cls(nkeys.from_seed(bytearray(seed)).public_key.decode(), seed)

    def sign_jwt(self, subject: str, name: str, nats: dict[str, Any]) -> str:
        claims: dict[str, Any] = {"iat": int(time.time()), "iss": self.public, "name": name, "sub": subject}
        claims["nats"] = {**nats, "version": 2}
        claims["jti"] = (
            base64.b32encode(hashlib.sha256(json.dumps(claims).encode()).digest()).decode().rstrip("=")
        )
        head = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
        body = _b64(json.dumps(claims).encode())
        signature = nkeys.from_seed(bytearray(self.seed)).sign(f"{head}.{body}".encode())
        return f"{head}.{body}.{_b64(signature)}"


class Operator:
    """An operator with accounts and users; writes the server's auth config and users' creds files."""

    def __init__(self) -> None:
        self.key = Identity.new(nkeys.PREFIX_BYTE_OPERATOR)
        self.jwt = self.key.sign_jwt(self.key.public, "cadmcp-test", {"type": "operator"})
        self.accounts: dict[str, tuple[Identity, str]] = {}

    def account(self, name: str) -> Identity:
        key = Identity.new(nkeys.PREFIX_BYTE_ACCOUNT)
        limits = {**NO_LIMITS, "imports": -1, "exports": -1, "wildcards": True, "conn": -1, "leaf": -1}
        self.accounts[name] = (
            key,
            self.key.sign_jwt(key.public, name, {"type": "account", "limits": limits}),
        )
        return key

    def creds(self, account: str, user: str, allow: list[str], folder: Path) -> Path:
        """A `.creds` file for a new user of `account` who may publish and subscribe `allow`."""
        account_key = self.accounts[account][0]
        key = Identity.new(nkeys.PREFIX_BYTE_USER)
        claims = {"type": "user", "pub": {"allow": allow}, "sub": {"allow": allow}, **NO_LIMITS}
        token = account_key.sign_jwt(key.public, user, claims)
        path = folder / f"{user}.creds"
        path.write_text(
            f"-----BEGIN NATS USER JWT-----\n{token}\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n\n"
            f"-----BEGIN USER NKEY SEED-----\n{key.seed.decode()}\n------END USER NKEY SEED------\n"
        )
        path.chmod(0o600)
        return path

    def server_auth(self) -> str:
        preload = ", ".join(f'{key.public}: "{token}"' for key, token in self.accounts.values())
        return f'operator: "{self.jwt}"\nresolver: MEMORY\nresolver_preload: {{ {preload} }}'
