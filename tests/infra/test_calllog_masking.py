"""Call logs mask secrets by a documented rule, and their files are private to the user."""

from __future__ import annotations

import os
import stat
from datetime import datetime
from pathlib import Path

import pytest

from cadmcp.wire.calllog import CallLogFile, clip
from cadmcp.wire.masking import MASK, mask_secrets, mask_text, secret_name

SECRET_NAMES = [
    "password", "PASSWORD", "pwd", "password2", "pass_word", "passPhrase", "db_pass", "ssh_key",
    "sshKey", "access_key_id", "AWS_SECRET_ACCESS_KEY", "auth", "authToken", "Authorization", "bearer",
    "pin", "PIN_code", "session_id", "sessionId", "x-api-key", "API_KEY", "client_secret", "Cookie",
    "otp", "private-key", "credentials", "refresh_token", "jwt",
]  # fmt: skip
PLAIN_NAMES = ["author", "spin", "layer", "passes", "bypass", "compass", "keyboard", "key", "path", "title"]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names_are_masked_whatever_their_spelling(name: str) -> None:
    assert secret_name(name)
    assert mask_secrets({"outer": {name: "hunter2-value"}}) == {"outer": {name: MASK}}


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_ordinary_names_are_left_alone(name: str) -> None:
    assert not secret_name(name)
    assert mask_secrets({name: "A-WALL"}) == {name: "A-WALL"}


CREDENTIAL_TEXTS = {
    "bearer header": ("Authorization: Bearer abcDEF123456.ghi-789", "abcDEF123456"),
    "basic header": ("Basic dXNlcjpodW50ZXIyMjI=", "dXNlcjpodW50"),
    "private key": (
        "key = '''-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----''' # done",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    "cut private key": ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7yq", "MIIEowIBAAKCAQEA"),
    "jwt": ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig_nature-x", "eyJzdWIiOiIxMjM0"),
    "github": ("use ghp_0123456789abcdefghijABCDEFGHIJ012345 here", "0123456789abcdef"),
    "aws": ("id AKIAIOSFODNN7EXAMPLE in the config", "IOSFODNN7EXAMPLE"),
    "openai-style": ("OPENAI=sk-proj-Abc123Def456Ghi789Jkl0", "Abc123Def456Ghi789"),
    "anthropic-style": ("k = sk-ant-api03-Zyx987Wvu654Tsr321Qpo0", "Zyx987Wvu654Tsr"),
    "slack": ("xoxb-1234567890-abcdefghijkl", "1234567890-abcd"),
    "url password": ("postgres://admin:s3cr3tpass@db.local/app", "s3cr3tpass"),
    "code assignment": ('password = "hunter2hunter2"\nprint(1)', "hunter2hunter2"),
    "json text": ('{"api_key": "k-9f8e7d6c5b4a", "layer": "A-WALL"}', "k-9f8e7d6c5b4a"),
    "env style": ("export SESSION_ID=abcd1234efgh5678", "abcd1234efgh5678"),
    "cadmcp token": ("cadmcp_tok_Qw3rTy_uIoP-aSdFgHjKlZxCvBnM12345", "Qw3rTy_uIoP"),
}


@pytest.mark.parametrize("kind", sorted(CREDENTIAL_TEXTS))
def test_credential_looking_text_is_masked_in_place(kind: str) -> None:
    text, secret = CREDENTIAL_TEXTS[kind]
    masked = mask_text(text)
    assert secret not in masked
    assert MASK in masked


def test_ordinary_text_and_code_stay_readable() -> None:
    code = "msp.add_line((0, 0), (1, 1), dxfattribs={'layer': 'A-WALL'})\nprint(doc.header['$ACADVER'])"
    assert mask_text(code) == code
    assert mask_text("see https://example.com/docs/page?x=1") == "see https://example.com/docs/page?x=1"
    assert mask_text('layer = "A-WALL"; author: "Jane"') == 'layer = "A-WALL"; author: "Jane"'


def test_a_secret_cut_by_the_clip_leaves_no_prefix() -> None:
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    logged = clip("x" * 1990 + " " + token + " and more")
    assert not any(token[i : i + 8] in logged for i in range(len(token) - 8))


# -- files and folders ---------------------------------------------------------------------------
def test_log_folder_0700_and_files_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        log = CallLogFile(tmp_path / "state" / "log", pid=31)
        log.write("a line")
        log.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "state" / "log").st_mode) == 0o700
    assert log.path is not None and stat.S_IMODE(os.stat(log.path).st_mode) == 0o600


def test_an_existing_open_folder_of_ours_is_tightened(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    folder.mkdir()
    os.chmod(folder, 0o755)
    CallLogFile(folder, pid=32).write("x")
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700


def test_a_link_of_our_own_to_a_log_folder_is_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "bigger-disk"
    elsewhere.mkdir()
    (tmp_path / "log").symlink_to(elsewhere)
    log = CallLogFile(tmp_path / "log", pid=33)
    log.write("a line")
    log.close()
    assert [p.name for p in elsewhere.iterdir()] == [log.path.name if log.path else ""]
    assert stat.S_IMODE(os.stat(elsewhere).st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a link to another account needs root")
def test_a_strangers_link_is_not_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chmod(elsewhere, 0o755)
    link = tmp_path / "log"
    link.symlink_to(elsewhere)
    os.lchown(link, 65534, 65534)  # as if another account had planted it
    log = CallLogFile(link, pid=33)
    log.write("a secret line")
    assert list(elsewhere.iterdir()) == []
    assert stat.S_IMODE(os.stat(elsewhere).st_mode) == 0o755


def test_a_link_planted_at_the_next_file_name_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "bashrc"
    victim.write_text("original\n")
    log = CallLogFile(folder, pid=34, clock=lambda: datetime(2026, 3, 1, 9))
    hour = "2026030109"
    (folder / f"log_34_{hour}_0.log").symlink_to(victim)
    log.write("injected line")
    log.close()
    assert victim.read_text() == "original\n"
    assert log.path is not None and log.path.name == f"log_34_{hour}_1.log"
