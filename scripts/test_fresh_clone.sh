#!/usr/bin/env bash
# The README's test command (scripts/test.sh) in a fresh clone of this checkout's HEAD,
# made in a temporary folder with no shared/ beside it: what a user who clones the
# repository anywhere runs. The suite must pass there. The tests that need a large
# random-weight model (kept only in the shared folder) skip, each with one line naming
# the file: this script lists every skipped test with its line, and fails when the suite
# fails or when a test skips for want of a file the clone itself should hold.
#   scripts/test_fresh_clone.sh                  # in a new temporary folder, removed after
#   scripts/test_fresh_clone.sh DIR              # clones into DIR/pagoda and keeps it
#   PAGODA_FUZZ_SECONDS=5 scripts/test_fresh_clone.sh   # passed on to scripts/test.sh
# Under ccache with CCACHE_BASEDIR (as .ci/run sets them), CCACHE_BASEDIR is pointed at
# the clone, so that its build reuses the objects of this checkout's build.
set -euo pipefail
cd "$(dirname "$0")/.."
readonly root="$PWD"

say() { echo "fresh clone: $*"; }

# The physical path: CMake resolves symbolic links in the paths it compiles in.
if [[ $# -gt 0 ]]; then
  mkdir -p "$1"
  parent="$(cd "$1" && pwd -P)"
else
  parent="$(cd "$(mktemp -d "${TMPDIR:-/tmp}/pagoda-fresh-clone.XXXXXX")" && pwd -P)"
  trap 'rm -rf "$parent"' EXIT
fi
readonly parent clone="$parent/pagoda"
if [[ -e "$parent/shared" || -e "$clone" ]]; then
  echo "fresh clone: $parent must hold neither shared/ nor pagoda/" >&2
  exit 2
fi

commit=$(git rev-parse HEAD)
git diff --quiet HEAD || say "uncommitted changes here are not in the clone: it tests HEAD"
say "cloning ${commit:0:12} into $clone (no $parent/shared beside it)"
git clone --quiet --no-checkout "$root" "$clone"
git -C "$clone" checkout --quiet --detach "$commit"

started=$(date +%s)
status=0
(
  cd "$clone"
  if [[ -n "${CCACHE_BASEDIR:-}" ]]; then export CCACHE_BASEDIR="$clone"; fi
  scripts/test.sh
) || status=$?
say "scripts/test.sh exited with $status after $(( $(date +%s) - started ))s"

# Every skipped test and its reason, from CTest's log: the line after GoogleTest's
# "Skipped" (the test's GTEST_SKIP message) or an end-to-end script's "SKIPPED: ...".
log="$clone/build/Testing/Temporary/LastTest.log"
if [[ ! -f "$log" ]]; then
  say "no $log: the suite did not run"
  exit 1
fi
skips=$(awk '
  /^[0-9]+\/[0-9]+ Test: / {
    test = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", test); sub(/  # GetParam\(\) = .*/, "", test); next
  }
  /: Skipped$/ { want = 1; next }
  want && NF { print test ": " $0; want = 0; next }
  /^SKIPPED: / { print test ": " substr($0, 10) }
' "$log")
missing=$(grep -E '^[^ ]+: missing ' <<<"$skips" || true)
others=$(grep -vE '^[^ ]+: missing ' <<<"$skips" || true)
say "$(grep -c . <<<"$skips" || true) tests skipped; for a missing file:"
[[ -z "$missing" ]] || sed 's/^/  /' <<<"$missing"
say "for other reasons (tests, reason):"
[[ -z "$others" ]] || sed 's/^[^ ]*: //' <<<"$others" | sort | uniq -c | sort -rn
# A missing file is allowed only where it lives in the shared folder (absent here).
unexpected=$(grep -vF ": missing $parent/shared/" <<<"$missing" || true)
if [[ -n "$unexpected" ]]; then
  say "tests skipped for files a fresh clone should hold:"
  sed 's/^/  /' <<<"$unexpected"
  status=1
fi
exit "$status"
