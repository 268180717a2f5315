#!/usr/bin/env bash
# The relay suite (relay/src, relay/test) with every relay the test harness builds on a
# PostgreSQL ledger: scripts/test.sh (setup, build, vitest) with SVC_TEST_LEDGER=postgres,
# on the run's one throwaway PostgreSQL server. Extra arguments go
# to vitest.
set -euo pipefail
cd "$(dirname "$0")/.."
SVC_TEST_LEDGER=postgres exec bash scripts/test.sh relay/src/ relay/test/ "$@"
