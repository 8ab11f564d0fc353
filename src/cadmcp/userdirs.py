"""Where cadmcp keeps its files for the current user; each folder can be moved by a variable."""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_DIR_ENV = "CADMCP_CONFIG_DIR"
CACHE_DIR_ENV = "CADMCP_CACHE_DIR"
LOG_DIR_ENV = "CADMCP_LOG_DIR"
RECOVERY_DIR_ENV = "CADMCP_RECOVERY_DIR"


def config_dir() -> Path:
    """Settings (toolset registries, launch configuration): `CADMCP_CONFIG_DIR`, else the user config dir."""
    if override := os.environ.get(CONFIG_DIR_ENV):
        return Path(override)
    from platformdirs import user_config_dir

    return Path(user_config_dir("cadmcp", appauthor=False))


def cache_dir() -> Path:
    """Rebuildable files (PEP 723 dependency environments): `CADMCP_CACHE_DIR`, else the user cache dir."""
    if override := os.environ.get(CACHE_DIR_ENV):
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cadmcp", appauthor=False))


def log_dir() -> Path:
    """Call logs: `CADMCP_LOG_DIR`, else the user log dir."""
    if override := os.environ.get(LOG_DIR_ENV):
        return Path(override)
    from platformdirs import user_log_dir

    return Path(user_log_dir("cadmcp", appauthor=False))


def recovery_dir() -> Path:
    """Copies of documents a stopping host had unsaved changes in: `CADMCP_RECOVERY_DIR`, else
    `recovered` in the user state dir."""
    if override := os.environ.get(RECOVERY_DIR_ENV):
        return Path(override)
    from platformdirs import user_state_dir

    return Path(user_state_dir("cadmcp", appauthor=False)) / "recovered"
