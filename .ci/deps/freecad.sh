#!/usr/bin/env bash
# FreeCAD (0.20 or newer) for the FreeCAD host tests, and Xvfb for its GUI mode.
# Debian/Ubuntu: the distribution's packages (~115 MB download). A quick no-op when present.
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"
apt_install freecad.sh "freecad xvfb xauth" "FreeCAD 0.20+ (freecadcmd, freecad) and Xvfb" freecadcmd freecad Xvfb
