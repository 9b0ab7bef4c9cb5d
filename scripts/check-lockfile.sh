#!/usr/bin/env bash
# Fails when package-lock.json would not let `npm ci` install on some platform: a package
# missing from the lock file (`Missing: @duckdb/node-bindings-darwin-arm64@... from lock file`:
# npm records an optional platform package only when the lock file is generated with it), a
# lock entry that no longer satisfies package.json, or an entry without a version or integrity
# (npm 11 writes such stubs when a registry answers with an incomplete manifest).
#
#   bash scripts/check-lockfile.sh [LOCKFILE [PACKAGE_JSON]]   # default: the project's own
#
# It runs `npm ci --dry-run` for a few platforms in a temporary folder holding only package.json,
# the lock file and the workspace packages' package.json (packages/*/package.json, beside
# PACKAGE_JSON), so it neither reads nor touches node_modules. Fix a failure with
# `npm install --package-lock-only` (or, for stubs, a fresh `rm -rf node_modules
# package-lock.json && npm install`). Takes a few seconds; no download when the lock file is complete.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
lock="$(realpath "${1:-$root/package-lock.json}")"
manifest="$(realpath "${2:-$root/package.json}")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$manifest" "$tmp/package.json"
cp "$lock" "$tmp/package-lock.json"
for workspace in "$(dirname "$manifest")"/packages/*/package.json; do
  [[ -f "$workspace" ]] || continue
  name="$(basename "$(dirname "$workspace")")"
  mkdir -p "$tmp/packages/$name"
  cp "$workspace" "$tmp/packages/$name/package.json"
done
cd "$tmp"

node -e '
  const lock = JSON.parse(require("node:fs").readFileSync("package-lock.json", "utf8"));
  // "" is the root, a path outside node_modules/ a workspace package (packages/<name>): both are folders of the tree.
  const bad = Object.entries(lock.packages ?? {}).filter(([path, e]) => path.includes("node_modules/") && !e.link && !(e.version && e.integrity));
  if (lock.lockfileVersion < 2 || bad.length > 0) {
    console.error(`package-lock.json: ${bad.length} entries without a version or integrity, e.g. ${bad.slice(0, 3).map(([p]) => p).join(", ")}`);
    process.exit(1);
  }
'

# npm compares the whole lock file with package.json whatever the platform; the platforms
# only change which optional packages it would install.
for platform in linux/x64 darwin/arm64 win32/x64; do
  if ! out="$(npm ci --dry-run --ignore-scripts --no-audit --no-fund --os="${platform%/*}" --cpu="${platform#*/}" 2>&1)"; then
    echo "package-lock.json is not complete for npm ci (checked as $platform):" >&2
    grep -E 'Missing:|Invalid:|npm error code|in sync' <<<"$out" | head -40 >&2 || tail -40 <<<"$out" >&2
    echo "Regenerate it: npm install --package-lock-only" >&2
    exit 1
  fi
done
echo "package-lock.json: complete (npm ci --dry-run passes for linux/x64, darwin/arm64, win32/x64)"
