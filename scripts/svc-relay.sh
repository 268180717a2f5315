#!/bin/sh
# Runs svc-relay from the TypeScript sources (no build needed), from any directory.
root="$(cd "$(dirname "$0")/.." && pwd)"
exec node --conditions=source --import "$root/node_modules/tsx/dist/loader.mjs" "$root/relay/src/bin/svc-relay.ts" "$@"
