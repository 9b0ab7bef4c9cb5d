# Sourced by the scripts that build real clients for the tests into a cache (build-otel-tools.sh,
# build-kafka-connect-http.sh): one build of a cached folder at a time.
#
# take_build_lock LOCK DIR: the caller defines `complete` (true when DIR is finished) and `say`.
# Takes the lock folder LOCK and releases it when the script exits. The lock holds the builder's
# pid: mkdir is atomic, and a lock whose process is gone (a killed build) is taken over instead of
# being waited on. While another build holds it, waits for it, at most 15 minutes (then exit 4);
# when DIR is complete (before or after the wait), prints DIR and exits 0: nothing to build.

EXIT_LOCK_TIMEOUT=4

take_build_lock() {
  local lock="$1" dir="$2" waited=0 holder
  mkdir -p "$(dirname "$lock")"
  until mkdir "$lock" 2>/dev/null; do
    if complete; then
      echo "$dir"
      exit 0
    fi
    holder="$(cat "$lock/pid" 2>/dev/null || true)"
    if [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; then
      say "taking over the lock of build $holder, which is gone"
      rm -rf "$lock"
      continue
    fi
    if [ "$waited" -eq 0 ]; then say "another build (pid ${holder:-?}) is running; waiting for it"; fi
    if [ "$waited" -ge 1800 ]; then
      say "waited 15 minutes for another build (lock $lock); giving up"
      exit "$EXIT_LOCK_TIMEOUT"
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  echo "$$" >"$lock/pid"
  # shellcheck disable=SC2064 # the lock's path is fixed now
  trap "rm -rf '$lock'" EXIT
  if complete; then
    echo "$dir"
    exit 0
  fi
}
