#!/usr/bin/env bash
# FreeCAD (0.20 or newer) for the FreeCAD host tests, and Xvfb for its GUI mode.
# Debian/Ubuntu: the distribution's packages (~115 MB download). A quick no-op when present.
set -euo pipefail
have() { command -v "$1" >/dev/null 2>&1; }
if have freecadcmd && have freecad && have Xvfb; then
  exit 0
fi
packages="freecad xvfb xauth"
if ! have apt-get; then
  echo "freecad.sh: no apt-get here; install FreeCAD 0.20+ (freecadcmd, freecad) and Xvfb yourself" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  if have sudo && sudo -n true 2>/dev/null; then
    SUDO=sudo
  else
    echo "freecad.sh: run as root (or with sudo): apt-get install -y --no-install-recommends $packages" >&2
    exit 1
  fi
fi
echo "freecad.sh: installing $packages (apt)" >&2
export DEBIAN_FRONTEND=noninteractive
${SUDO:-} apt-get update -qq >/dev/null
${SUDO:-} apt-get install -y -qq --no-install-recommends $packages >/dev/null
have freecadcmd && have Xvfb
