#!/usr/bin/env bash
# Builds two real OpenTelemetry clients that the tests and the OTLP bench drive against Sluice,
# from the Go module proxy with the machine's Go, at pinned versions:
#   - otelcol-sluice: an OpenTelemetry Collector (core v0.165.0) with the otlp receiver, the batch
#     processor, the otlp (gRPC), otlp_http, debug and nop exporters, and contrib's file exporter
#     (the bench's peer baseline: otlp receiver -> batch -> file);
#   - telemetrygen v0.161.0, the Collector project's load generator.
#
# The binaries are cached outside the repository, in a folder named by the versions under
# SLUICE_OTEL_TOOLS_CACHE, else $XDG_CACHE_HOME/sluice, else ~/.cache/sluice; the builder's work
# folder stays there too (a rebuild is warm). When both binaries are there the script only prints
# their folder (well under a second). Parallel callers wait for one build (a lock folder).
#
# Prints the folder that holds bin/otelcol-sluice and bin/telemetrygen on stdout (one line);
# progress goes to stderr. Exit codes: 0 built or present, 3 Go is not on PATH, 4 another build
# held the lock too long, 1 the build failed.
set -euo pipefail

COLLECTOR_VERSION=v0.165.0          # go.opentelemetry.io/collector/... (builder and components)
CONFMAP_PROVIDERS_VERSION=v1.71.0   # go.opentelemetry.io/collector/confmap/provider/...
CONTRIB_VERSION=v0.165.1            # contrib's fileexporter (v0.165.0 of contrib is not served)
TELEMETRYGEN_VERSION=v0.161.0       # the newest telemetrygen the proxy serves (v0.163+ refused)

# Bumped when the recipe below changes (components, flags): the cache folder is named by it too.
RECIPE=2

EXIT_NO_GO=3

# shellcheck source=scripts/build-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/build-lock.sh"

say() { echo "[build-otel-tools] $*" >&2; }

cache_root="${SLUICE_OTEL_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice}"
name="otel-tools-r${RECIPE}-collector-${COLLECTOR_VERSION}-contrib-${CONTRIB_VERSION}-telemetrygen-${TELEMETRYGEN_VERSION}"
dir="$cache_root/$name"
work="$cache_root/$name.work"
lock="$cache_root/$name.lock"

complete() { [ -f "$dir/.complete" ] && [ -x "$dir/bin/otelcol-sluice" ] && [ -x "$dir/bin/telemetrygen" ]; }

if complete; then
  echo "$dir"
  exit 0
fi

# Binaries built before are used without Go; only a build needs it.
if ! command -v go >/dev/null 2>&1; then
  say "Go is not on PATH: the OpenTelemetry Collector and telemetrygen cannot be built (install Go 1.21 or newer, which fetches the toolchain the modules ask for)."
  exit "$EXIT_NO_GO"
fi

take_build_lock "$lock" "$dir"

started=$SECONDS
say "building the OpenTelemetry Collector $COLLECTOR_VERSION and telemetrygen $TELEMETRYGEN_VERSION with $(go env GOVERSION) into $dir (once; a few minutes cold)"
mkdir -p "$work/gobin" "$work/bin"
export GOBIN="$work/gobin"
export GOFLAGS="-buildvcs=false"

if [ ! -x "$GOBIN/builder" ]; then
  say "installing the Collector builder"
  go install "go.opentelemetry.io/collector/cmd/builder@$COLLECTOR_VERSION" >&2
fi

core() { echo "  - gomod: go.opentelemetry.io/collector/$1 $COLLECTOR_VERSION"; }
provider() { echo "  - gomod: go.opentelemetry.io/collector/confmap/provider/$1 $CONFMAP_PROVIDERS_VERSION"; }

# $1: with or without contrib's file exporter.
manifest() {
  cat <<EOF
dist:
  name: otelcol-sluice
  version: ${COLLECTOR_VERSION#v}
  description: OpenTelemetry Collector for Sluice's tests and bench
  output_path: $work/collector
receivers:
$(core receiver/otlpreceiver)
processors:
$(core processor/batchprocessor)
exporters:
$(core exporter/otlpexporter)
$(core exporter/otlphttpexporter)
$(core exporter/debugexporter)
$(core exporter/nopexporter)
EOF
  if [ "$1" = with-file ]; then
    echo "  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter $CONTRIB_VERSION"
  fi
  cat <<EOF
providers:
$(provider envprovider)
$(provider fileprovider)
$(provider yamlprovider)
EOF
}

# The builder's own module step (go mod tidy) fails with the file exporter: its *tests* import a
# contrib module the proxy does not serve. So the builder resolves the modules without it, then
# generates the sources with it but skips its module step, and `go get` adds the file exporter
# (and only what its non-test packages import) to the resolved go.mod before the compilation.
manifest without-file >"$work/manifest-core.yaml"
manifest with-file >"$work/manifest.yaml"
say "resolving the Collector's modules"
"$GOBIN/builder" --config "$work/manifest-core.yaml" --skip-compilation >&2
cp "$work/collector/go.mod" "$work/go.mod.core"
cp "$work/collector/go.sum" "$work/go.sum.core"
say "generating the Collector with the file exporter"
"$GOBIN/builder" --config "$work/manifest.yaml" --skip-get-modules --skip-compilation >&2
cp "$work/go.mod.core" "$work/collector/go.mod"
cp "$work/go.sum.core" "$work/collector/go.sum"
(
  cd "$work/collector"
  go get "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter@$CONTRIB_VERSION" >&2
  say "compiling the Collector"
  go build -trimpath -ldflags="-s -w" -o "$work/bin/otelcol-sluice" . >&2
)

say "building telemetrygen"
go install "github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@$TELEMETRYGEN_VERSION" >&2
mv "$GOBIN/telemetrygen" "$work/bin/telemetrygen"

# The finished folder appears whole: binaries first, the marker last.
rm -rf "$dir"
mkdir -p "$dir/bin"
mv "$work/bin/otelcol-sluice" "$work/bin/telemetrygen" "$dir/bin/"
date -u +%Y-%m-%dT%H:%M:%SZ >"$dir/.complete"
say "ready in $((SECONDS - started)) s: $dir/bin"
echo "$dir"
