#!/bin/sh
# Runs svc-relay from the TypeScript sources (no build needed).
exec node --conditions=source --import tsx "$(dirname "$0")/../relay/src/bin/svc-relay.ts" "$@"
