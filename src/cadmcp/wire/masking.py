"""What the call logs never write: values of secret-named fields, and text that looks like a credential.

The rule (documented in docs/security.md):

1. **By name.** A field's name is split into words (at separators, case changes and digits,
   which are dropped) and lower-cased. It is secret when the words joined contain one of
   `NAME_STEMS` (so `password2`, `pass_word`, `ssh_key`, `access_key_id`, `authToken`,
   `session_id` all match), or when one of its words is one of `NAME_WORDS` (`pwd`,
   `pass`, `pin`, `auth`...: short words matched whole, so `author` or `spin` are not).
   The whole value of such a field is replaced by `***`, at any depth.
2. **By look.** In any logged text, whatever its field: `Bearer`/`Basic` credentials,
   private-key blocks, URLs with a password, `name=value` / `name: "value"` pairs whose
   name is secret by rule 1, and well-known token formats (JWTs, GitHub, GitLab, Slack,
   AWS access keys, Google API keys, `sk-`/`sk_live_` style keys, npm and PyPI tokens,
   cadmcp's own HTTP tokens) are replaced by `***` in place, so the rest of a script or
   message stays readable.

Masking runs on the text before it is clipped, so a secret at the clip boundary is gone
too; it is a safety net, not a guarantee: a credential with no recognisable name or
shape (a bare word in a script) cannot be told from any other word.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

NAME_STEMS = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey",
    "privkey", "sshkey", "signingkey", "encryptionkey", "credential", "authorization", "bearer",
    "cookie", "sessionid", "sessionkey", "jwt", "csrf", "xsrf",
)  # fmt: skip
"""Matched anywhere in the joined, lower-cased words of a name."""
NAME_WORDS = frozenset({"pwd", "pass", "pin", "auth", "otp", "creds", "totp", "mfa"})
"""Matched as whole words only (they are too short to match inside other words)."""
_NAME_HINTS = (*NAME_STEMS, *NAME_WORDS)

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_SHAPES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    # (lower-case substrings one of which must occur, the pattern): the cheap test skips most text
    (("bearer", "basic"), re.compile(r"\b(?i:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")),
    (
        ("private key",),
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"  # a key block, to its end if any
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
            re.DOTALL,
        ),
    ),
    (("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),  # JWT
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,})"),
    ),
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),  # Slack
    (("akia", "asia"), re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),  # AWS access key id
    (("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),  # Google API key
    (("sk-",), re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")),  # OpenAI, Anthropic
    (("k_live_", "k_test_"), re.compile(r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}")),  # Stripe
    (("npm_", "pypi-"), re.compile(r"\bnpm_[A-Za-z0-9]{30,}|\bpypi-[A-Za-z0-9_-]{40,}")),
    (("cadmcp_tok_",), re.compile(r"\bcadmcp_tok_[A-Za-z0-9_-]{16,}")),  # cadmcp's HTTP token
)
_TRIGGERS = tuple((trigger, pattern) for triggers, pattern in _SHAPES for trigger in triggers)
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(?=@)", re.IGNORECASE)
_PAIR = re.compile(
    r"(?P<name>\b[A-Za-z_][A-Za-z0-9_.-]{1,60})(?P<sep>[\"']?\s*[:=]\s*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'}\])]+)"
)


@functools.lru_cache(maxsize=4096)  # names repeat from call to call
def secret_name(name: str) -> bool:
    """Whether a field named `name` holds a secret (rule 1 above)."""
    words = [w.lower() for w in _WORD.findall(name)]
    joined = "".join(words)
    return any(stem in joined for stem in NAME_STEMS) or any(w in NAME_WORDS for w in words)


def _pair(match: re.Match[str]) -> str:
    if not secret_name(match["name"]):
        return match[0]
    value = match["value"]
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match['name']}{match['sep']}{quote}{MASK}{quote}"


def mask_text(text: str) -> str:
    """`text` with credential-looking parts replaced by `***` (rule 2 above)."""
    if len(text) < 6:
        return text
    lower = text.lower()
    for trigger, pattern in _TRIGGERS:
        if trigger in lower:
            text = pattern.sub(_keep_scheme, text)
    if "://" in text and "@" in text:
        text = _URL_PASSWORD.sub(lambda m: m["head"] + MASK, text)
    squashed = lower.replace("_", "").replace("-", "")  # "api_key" holds the stem "apikey"
    for hint in _NAME_HINTS:
        if hint in squashed:
            return _PAIR.sub(_pair, text)
    return text


def _keep_scheme(match: re.Match[str]) -> str:
    word = match[0].split(None, 1)[0]
    return f"{word} {MASK}" if word.lower() in ("bearer", "basic") else MASK


def mask_secrets(value: Any, *, text: bool = True) -> Any:
    """A copy of `value` with secret-named fields masked at any depth, and credential-looking
    text masked too unless `text` is False (for values whose strings were masked already)."""
    if isinstance(value, Mapping):
        return {
            k: MASK if isinstance(k, str) and secret_name(k) else mask_secrets(v, text=text)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask_secrets(v, text=text) for v in value]
    if text and isinstance(value, str):
        return mask_text(value)
    return value
