#!/usr/bin/env bash
# The whole suite: installs what is missing, builds (the tests run the built svc and
# svc-relay commands as a user would), runs vitest, and ends with a plain
# "N passed, N failed" line that CI reads.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
# the tests start nats-server by name: Debian's is in /usr/sbin, off a normal user's PATH
command -v nats-server >/dev/null 2>&1 || export PATH="$PATH:/usr/sbin"
npm run build --silent >&2
mkdir -p .tmp
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json=.tmp/vitest.json "$@" || status=$?
if [ -f .tmp/vitest.json ]; then
  node -e '
    const r = JSON.parse(require("node:fs").readFileSync(".tmp/vitest.json", "utf8"));
    // A file that fails before any test runs (import error) counts as one failure.
    const brokenFiles = r.testResults.filter((f) => f.status === "failed" && !f.assertionResults.some((a) => a.status === "failed")).length;
    const failed = r.numFailedTests + brokenFiles;
    const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    console.log(`${r.numPassedTests} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ""));
  '
fi
exit $status
