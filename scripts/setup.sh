#!/usr/bin/env bash
# Installs what the project needs and is missing: npm packages, and Debian packages through
# apt when running as root: nats-server always; with --test (what `npm test` runs) also what
# only the tests use: chromium for the dashboard's browser tests (and `svc desktop`);
# gnome-keyring, dbus, dbus-user-session for the keyring vault test; tmux for the terminal UI
# test; jq and curl for the docs' walkthroughs; postgresql for the PostgreSQL ledger's tests.
# Never downloads binaries itself. Builds the dashboard page when its sources changed.
set -euo pipefail
cd "$(dirname "$0")/.."
for_tests=0
[ "${1:-}" = "--test" ] && for_tests=1

export ELECTRON_SKIP_BINARY_DOWNLOAD=1

need_apt=()
# Debian's package puts it in /usr/sbin, which a normal user's PATH lacks: the relay looks
# there too (and scripts/test.sh adds it to the tests' PATH), so it is not missing
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || need_apt+=(nats-server)
# Test-only: a private Secret Service (daemon/test/vault-keyring.test.ts skips without it), and
# chromium for the dashboard's browser tests (e2e/test/dashboard.test.ts; also what `svc desktop`
# opens where no Electron is installed).
test_apt=()
if [ "$for_tests" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || test_apt+=(chromium)
  command -v tmux >/dev/null 2>&1 || test_apt+=(tmux)
  # the walkthroughs of docs/local-stack.md run as printed (e2e/test/docs-local-stack.test.ts)
  command -v jq >/dev/null 2>&1 || test_apt+=(jq)
  command -v curl >/dev/null 2>&1 || test_apt+=(curl)
  # the PostgreSQL ledger's tests (the harness starts a throwaway server; they skip without it)
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || test_apt+=(postgresql)
  if ! command -v gnome-keyring-daemon >/dev/null 2>&1 || ! command -v dbus-run-session >/dev/null 2>&1; then
    test_apt+=(gnome-keyring dbus dbus-user-session)
  fi
fi
all_apt=(${need_apt[@]+"${need_apt[@]}"} ${test_apt[@]+"${test_apt[@]}"})
if [ ${#all_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${all_apt[*]} with apt-get" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${all_apt[@]}" >/dev/null
  else
    echo "setup: missing ${all_apt[*]}; run: sudo apt-get install -y ${all_apt[*]}" >&2
    # the test-only packages are not needed to build or run: only the others stop setup
    [ ${#need_apt[@]} -eq 0 ] || exit 1
  fi
fi

# npm packages: installed exactly as the lock file says (npm ci, which never rewrites it)
# when node_modules is missing or older than the lock file. It also links the svc and
# svc-relay commands into node_modules/.bin (npx svc); `npm link` puts them on PATH.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages (npm ci)" >&2
  # npm's EBADENGINE warnings (five lines per package) are folded into one line: a few
  # dependencies of dependencies (build tools, nats' id generator, light-my-request's
  # cookie) declare Node 22 in their engines, and svc runs, and is tested, on Node 20.19+
  npm ci --no-audit --no-fund 2>&1 | awk -v node="$(node -v)" '
    /^npm warn EBADENGINE/ {
      if ($0 ~ /package: /) { p = $0; sub(/.*package: ./, "", p); sub(/.,?$/, "", p); pkgs = pkgs (pkgs ? ", " : "") p }
      next
    }
    { print; fflush() }
    END { if (pkgs) print "setup: npm warned that some dependencies ask for a newer Node in their engines field (" pkgs "); svc runs and is tested on Node " node ", nothing to do" }
  ' >&2
fi

# the dashboard page the daemon serves (daemon/dist/dashboard-page), rebuilt when its sources changed
node daemon/dashboard/build.mjs --if-stale >&2
