#!/bin/sh
# Runs the svc CLI from the TypeScript sources (no build needed), from any directory.
root="$(cd "$(dirname "$0")/.." && pwd)"
exec node --conditions=source --import "$root/node_modules/tsx/dist/loader.mjs" "$root/cli/src/bin/svc.ts" "$@"
