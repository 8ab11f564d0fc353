#!/usr/bin/env bash
# Chromium and its WebDriver for the dashboard's browser tests (Selenium drives them headless).
# Debian/Ubuntu: the distribution's chromium and chromium-driver packages. A quick no-op when present.
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"
# its recommended packages bring the fonts the page is drawn with
APT_RECOMMENDS=yes apt_install browser.sh "chromium chromium-driver" "Chromium and its matching chromedriver" chromium chromedriver
