/**
 * The packaging config is checked with electron-builder's own validator (its JSON schema),
 * offline; and it packages what the shell needs: the built main script and the icons.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const dir = fileURLToPath(new URL('..', import.meta.url));
const config = JSON.parse(readFileSync(`${dir}electron-builder.json`, 'utf8')) as Record<string, unknown> & {
  files: string[];
  extraMetadata: { main: string };
  linux: { icon: string };
};
const pkg = JSON.parse(readFileSync(`${dir}package.json`, 'utf8')) as { main: string };

// app-builder-lib is electron-builder's own library: resolve it from there
const fromBuilder = createRequire(createRequire(import.meta.url).resolve('electron-builder'));
const { validateConfiguration } = fromBuilder('app-builder-lib/out/util/config/config') as {
  validateConfiguration(config: unknown, logger: unknown): Promise<void>;
};
const { DebugLogger } = fromBuilder('builder-util') as { DebugLogger: new (enabled: boolean) => unknown };

describe('electron-builder.json', () => {
  it('passes electron-builder’s schema', async () => {
    await expect(validateConfiguration(config, new DebugLogger(false))).resolves.toBeUndefined();
  });

  it('the validator does refuse a wrong config (so the check above means something)', async () => {
    await expect(
      validateConfiguration({ ...config, linux: { ...config.linux, categry: 'Network' } }, new DebugLogger(false)),
    ).rejects.toThrow(/Invalid configuration/);
    await expect(validateConfiguration({ ...config, asar: 'yes' }, new DebugLogger(false))).rejects.toThrow(
      /Invalid configuration/,
    );
    await expect(validateConfiguration({ ...config, appld: 'typo' }, new DebugLogger(false))).rejects.toThrow(/appld/);
  });

  it('packages the main script package.json names, and icons that exist', () => {
    expect(config.extraMetadata.main).toBe(pkg.main);
    expect(config.files).toContain('dist/**/*.js');
    expect(existsSync(`${dir}${config.linux.icon}`)).toBe(true);
    expect(existsSync(`${dir}assets/tray.png`)).toBe(true);
  });
});
