"""Errors describe a file, they never quote it: secrets in a file never reach the error text."""

from __future__ import annotations

import os
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cadmcp.fileinfo import FileInfoError, read_file_info

from .test_fileinfo_fuzz import SEEDS

SUFFIXES = [".dxf", ".ifc", ".dwg", ".rvt", ".rfa"]
_ALNUM = string.ascii_letters + string.digits


def _leaks(text: str, secret: str, without_secret: str = "", window: int = 8) -> bool:
    """Whether a `window`-character piece of the secret appears in the text, and not in
    `without_secret` (the answer for the same file without the secret: its own words)."""
    pieces = (secret[i : i + window] for i in range(len(secret) - window + 1))
    return any(piece in text and piece not in without_secret for piece in pieces)


def _notes(info: dict[str, object]) -> str:
    """The free-text notes an answer may carry about what could not be read."""
    parts = [str(v) for k, v in info.items() if k.endswith("Note")]
    atom = info.get("partAtom")
    if isinstance(atom, dict) and "error" in atom:
        parts.append(str(atom["error"]))
    return " ".join(parts)


secrets_ = st.text(_ALNUM, min_size=16, max_size=40).map(lambda s: "Zq" + s)
"""Secret-looking values ("Zq" keeps them from matching words of a message by chance)."""


@st.composite
def files_with_secrets(draw: st.DrawFn) -> tuple[str, bytes, str]:
    """A file with a supported extension (a seed of any format, junk, a password file), a secret inside."""
    secret = draw(secrets_)
    suffix = draw(st.sampled_from(SUFFIXES))
    shape = draw(st.sampled_from(["seed", "junk", "environ", "passwd", "dxf-tag"]))
    if shape == "seed":
        data = bytearray(SEEDS[draw(st.sampled_from(sorted(SEEDS)))])
    elif shape == "junk":
        data = bytearray(draw(st.binary(max_size=2048)))
    elif shape == "environ":
        data = bytearray(f"HOME=/root\0API_TOKEN={secret}\0PATH=/usr/bin\0".encode())
    elif shape == "passwd":
        data = bytearray(f"root:{secret}:20228:0:99999:7:::\nbin:*:20228:0:99999:7:::\n".encode())
    else:  # a line a DXF reader takes for a group code
        text = f"0\nSECTION\n2\nHEADER\n9\n$ACADVER\n{secret}\nAC1032\n0\nENDSEC\n0\nEOF\n"
        data = bytearray(text.encode())
    at = draw(st.integers(0, len(data)))
    data[at:at] = secret.encode()
    return suffix, bytes(data), secret


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=files_with_secrets(), detail=st.sampled_from(["summary", "full"]))
# a secret that shares eight letters with the words of the message ("DXFStructureError"): not a leak
@example(
    case=(
        ".dxf",
        b"Zq0tructure0000000HOME=/root\0API_TOKEN=Zq0tructure0000000\0PATH=/usr/bin\0",
        "Zq0tructure0000000",
    ),
    detail="summary",
)
def test_no_error_text_contains_bytes_of_the_file(case: tuple[str, bytes, str], detail: str) -> None:
    suffix, data, secret = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"drawing{suffix}"
        text = _answer_text(path, data, detail)
        # the same file with the secret blanked: words the answer says anyway are no leak
        without_secret = _answer_text(path, data.replace(secret.encode(), b"\x01" * len(secret)), detail)
        assert not _leaks(text, secret, without_secret), text


def _answer_text(path: Path, data: bytes, detail: str) -> str:
    """The error message, or the free-text notes, that reading `data` as `path` answers."""
    path.write_bytes(data)
    try:
        info = read_file_info(path, detail)  # type: ignore[arg-type]
    except FileInfoError as error:
        return error.message
    return _notes(info)


def test_a_dxf_group_code_that_is_a_secret_is_not_quoted(tmp_path: Path) -> None:
    """ezdxf says 'Invalid group code "<the line>"': the reader must not pass that on."""
    path = tmp_path / "plan.dxf"
    path.write_text("0\nSECTION\n2\nHEADER\n9\n$ACADVER\nroot:$6$saltsalt$hashhashhash:20228\nAC1032\n")
    with pytest.raises(FileInfoError) as caught:
        read_file_info(path)
    assert caught.value.code == "corrupt_file"
    assert "root:" not in caught.value.message and "hashhash" not in caught.value.message
    assert "plan.dxf" in caught.value.message and "DXF" in caught.value.message


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize(
    "target", ["/proc/self/environ", "/etc/passwd", "/etc/shadow", "/etc/group", "/etc/os-release"]
)
def test_links_to_system_files_answer_a_description_only(tmp_path: Path, suffix: str, target: str) -> None:
    if not os.access(target, os.R_OK):
        pytest.skip(f"{target} is not readable here")
    content = Path(target).read_bytes()
    link = tmp_path / f"innocent{suffix}"
    link.symlink_to(target)
    try:
        info = read_file_info(link)
    except FileInfoError as error:
        text = error.message
    else:
        text = _notes(info)
    assert target not in text  # the link's target is not named either
    entries = {w.decode("latin-1") for w in content.replace(b"\0", b"\n").split()}
    tokens = {w for w in entries if len(w) >= 6 and any(c in w for c in ':=/$"')}  # key=value, a:b:c
    assert tokens and not [w for w in tokens if w in text]


def test_a_user_that_does_not_exist_is_an_invalid_path() -> None:
    with pytest.raises(FileInfoError) as caught:
        read_file_info("~nosuchuser/x.dxf")
    assert caught.value.code == "invalid_path"
    assert "nosuchuser" in caught.value.message and "absolute path" in caught.value.message


@pytest.mark.parametrize("path", ["a" * 100_000 + ".dxf", "plan\0.dxf", "/" + "x/" * 3000 + "a.dxf"])
def test_huge_or_impossible_paths_answer_a_short_message(path: str) -> None:
    with pytest.raises(FileInfoError) as caught:
        read_file_info(path)
    assert caught.value.code in ("invalid_path", "not_found", "unreadable")
    assert len(caught.value.message) < 400
