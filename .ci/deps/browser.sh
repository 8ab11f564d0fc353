#!/usr/bin/env bash
# Chromium and its WebDriver for the dashboard's browser tests (Selenium drives them headless).
# Debian/Ubuntu: the distribution's chromium and chromium-driver packages. A quick no-op when present.
set -euo pipefail
have() { command -v "$1" >/dev/null 2>&1; }
if have chromium && have chromedriver; then
  exit 0
fi
packages="chromium chromium-driver"
if ! have apt-get; then
  echo "browser.sh: no apt-get here; install Chromium and its matching chromedriver yourself" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  if have sudo && sudo -n true 2>/dev/null; then
    SUDO=sudo
  else
    echo "browser.sh: run as root (or with sudo): apt-get install -y $packages" >&2
    exit 1
  fi
fi
echo "browser.sh: installing $packages (apt)" >&2
export DEBIAN_FRONTEND=noninteractive
${SUDO:-} apt-get update -qq >/dev/null
${SUDO:-} apt-get install -y -qq $packages >/dev/null
have chromium && have chromedriver
