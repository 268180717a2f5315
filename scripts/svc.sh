#!/bin/sh
# Runs the svc CLI from the TypeScript sources (no build needed).
exec node --conditions=source --import tsx "$(dirname "$0")/../cli/src/bin/svc.ts" "$@"
