#!/usr/bin/env bash
# The browser of the console's tests: Debian's chromium (playwright-core drives it through its
# executablePath; a test tool's own browser download cannot reach the network here). Idempotent
# and quick when it is there: it only installs when no chromium is found.
set -euo pipefail
for candidate in "${SLUICE_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    exit 0
  fi
done
echo "[ensure-chromium] installing Debian's chromium (for the console's browser tests)..." >&2
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# A stale package index would not know the current chromium version: refresh it first.
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
test -x /usr/bin/chromium
