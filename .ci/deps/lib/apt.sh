# Sourced by the component scripts: Debian/Ubuntu packages, installed once.
# apt_install NAME "PACKAGES" "HINT" COMMAND... installs PACKAGES unless every COMMAND is on PATH;
# where it cannot (no apt-get, no root), it says what to install (HINT) and fails. Recommended
# packages are left out unless APT_RECOMMENDS=yes.
have() { command -v "$1" >/dev/null 2>&1; }

apt_install() {
  local name=$1 packages=$2 hint=$3 cmd missing=0 sudo=""
  shift 3
  for cmd in "$@"; do have "$cmd" || missing=1; done
  [ "$missing" -eq 0 ] && return 0
  if ! have apt-get; then
    echo "$name: no apt-get here; install $hint yourself" >&2
    return 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    if have sudo && sudo -n true 2>/dev/null; then
      sudo=sudo
    else
      echo "$name: run as root (or with sudo): apt-get install -y $packages" >&2
      return 1
    fi
  fi
  echo "$name: installing $packages (apt)" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  local options=--no-install-recommends
  [ "${APT_RECOMMENDS:-no}" = yes ] && options=""
  # shellcheck disable=SC2086  # lists of package names and options
  $sudo apt-get install -y -qq $options $packages >/dev/null
  for cmd in "$@"; do have "$cmd" || { echo "$name: $cmd is still missing after apt-get" >&2; return 1; }; done
}
