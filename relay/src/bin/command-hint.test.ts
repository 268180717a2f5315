import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { commandFor, shellQuote } from './command-hint.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SVC = join(ROOT, 'cli', 'bin', 'svc.cjs');
const dir = mkdtempSync(join(tmpdir(), 'svc-hint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function binDir(name: string, target?: string): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  if (target) symlinkSync(target, join(d, 'svc'));
  else {
    writeFileSync(join(d, 'svc'), '#!/bin/sh\n');
    chmodSync(join(d, 'svc'), 0o755);
  }
  return d;
}

describe('commandFor', () => {
  it("names the command when PATH's svc is this checkout's, else the entry's absolute path", () => {
    expect(commandFor('svc', '')).toBe(SVC);
    expect(commandFor('svc', binDir('linked', SVC))).toBe('svc');
    // another svc first on PATH: the bare name would run that one
    expect(commandFor('svc', `${binDir('other')}:${join(dir, 'linked')}`)).toBe(SVC);
    // the node_modules/.bin that npm start and npx add exists only for what they run
    expect(commandFor('svc', binDir(join('checkout', 'node_modules', '.bin'), SVC))).toBe(SVC);
  });

  it('quotes a word for the shell only when it needs it', () => {
    expect(shellQuote('/srv/svc/.svc-relay')).toBe('/srv/svc/.svc-relay');
    expect(shellQuote("/home/o'neil/my relay")).toBe(`'/home/o'\\''neil/my relay'`);
  });
});
