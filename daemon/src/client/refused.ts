/**
 * What to tell the owner of an agent whose relay refuses its identity (session `refused`):
 * one wording for the daemon's error, `svc doctor`, the TUI and the dashboard, so that
 * the command they print cannot drift apart. Pure strings: the dashboard page bundles it.
 */

/** The command that removes the refused agent from this machine. */
export function deregisterCommand(name: string): string {
  return `svc deregister --local ${name}`;
}

/** The full advice, one paragraph (the daemon's error and `svc doctor`). */
export function refusedAdvice(name: string): string {
  return `The relay refuses agent ${name}'s identity: it was probably revoked. If this persists, remove it here (${deregisterCommand(name)}) and register again with a new enrollment code from the operator (svc register --enrollment-grant CODE).`;
}

/** The same, short enough for one line of a 100-column terminal (the TUI). */
export function refusedAdviceShort(name: string): string {
  return `the relay refuses ${name} (revoked?); if this persists: ${deregisterCommand(name)}, register anew`;
}
