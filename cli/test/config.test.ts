import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { svc, withTempHome } from './helpers.js';

describe('svc config', () => {
  it('set, get and list by profile in $SVC_HOME/config.json, without a daemon', async () => {
    await withTempHome(async (home) => {
      const env = { SVC_HOME: home };
      expect((await svc(['config', 'set', 'api-url', 'https://a.example'], { env })).code).toBe(0);
      expect((await svc(['config', 'set', 'api-url', 'https://b.example', '--profile', 'work'], { env })).code).toBe(0);
      expect(
        (await svc(['config', 'set', 'api-key', 'svc_ak_secretsecret1234', '--profile', 'work'], { env })).code,
      ).toBe(0);

      expect((await svc(['config', 'get', 'api-url'], { env })).stdout).toBe('https://a.example\n');
      expect((await svc(['config', 'get', 'api-url', '--profile', 'work'], { env })).stdout).toBe(
        'https://b.example\n',
      );
      expect((await svc(['config', 'get', 'api-key', '--profile', 'work'], { env })).stdout).toBe(
        'svc_ak_secretsecret1234\n',
      );

      const list = await svc(['config', 'list', '--profile', 'work'], { env });
      expect(list.stdout).toMatch(/api-url\s+https:\/\/b\.example/);
      expect(list.stdout).toMatch(/api-key\s+\*\*\*\*1234/);
      expect(list.stdout).not.toContain('secretsecret');
      expect((await svc(['config', 'list'], { env })).stdout).not.toContain('api-key');

      const file = JSON.parse(await readFile(join(home, 'config.json'), 'utf8'));
      expect(file.profiles.default).toEqual({ 'api-url': 'https://a.example' });
      expect((await stat(join(home, 'config.json'))).mode & 0o777).toBe(0o600);
    });
  });

  it('unknown keys, bad profile names and unset keys fail clearly', async () => {
    await withTempHome(async (home) => {
      const env = { SVC_HOME: home };
      const bad = await svc(['config', 'set', 'colour', 'blue'], { env });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('known keys: api-url');
      expect(bad.stderr).toContain('(usage_error)');
      expect((await svc(['config', 'get', 'nosuchkey'], { env })).stderr).toContain('(usage_error)');
      expect((await svc(['config', 'get', 'api-url', '--profile', '../x'], { env })).code).toBe(2);
      // a value a later command could not use is refused now, and nothing is written
      for (const value of ['notaurl', 'ftp://relay.example', ' ']) {
        const r = await svc(['config', 'set', 'api-url', value], { env });
        expect(r.code, value).toBe(2);
        expect(r.stderr, value).toMatch(/api-url (must be an http\(s\) URL|cannot be empty).*\(usage_error\)/);
      }
      expect(existsSync(join(home, 'config.json'))).toBe(false);
      const unset = await svc(['config', 'get', 'api-url'], { env });
      expect(unset.code).toBe(1);
      expect(unset.stderr).toContain('(not_found)');
      expect((await svc(['config', 'list'], { env })).stdout).toBe('No settings in profile default.\n');
    });
  });
});
