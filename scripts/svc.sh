#!/bin/sh
# Runs the svc CLI from the TypeScript sources (no build needed), from any directory.
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -f "$root/node_modules/tsx/dist/loader.mjs" ]; then
  echo "svc: the npm packages are not installed; install them with: npm ci --prefix '$root'" >&2
  exit 1
fi
exec node --conditions=source --import "$root/node_modules/tsx/dist/loader.mjs" "$root/cli/src/bin/svc.ts" "$@"
