/**
 * The packaging config is checked with electron-builder's own validator (its JSON schema),
 * offline; and it packages what the shell needs: the built main script and the icons, as
 * plain files with the Node build of better-sqlite3 (the system's Node runs the daemon).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const dir = fileURLToPath(new URL('..', import.meta.url));
const config = JSON.parse(readFileSync(`${dir}electron-builder.json`, 'utf8')) as Record<string, unknown> & {
  files: string[];
  extraMetadata: { main: string };
  linux: { icon: string };
  electronFuses?: Record<string, boolean>;
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

  it('plain files and the Node build of better-sqlite3: the system’s Node runs the daemon out of the app', async () => {
    // in an app.asar only Electron reads the daemon's script; see desktop/README.md
    expect(config.asar).toBe(false);
    expect(config).not.toHaveProperty('asarUnpack');
    expect(config.electronFuses?.onlyLoadAppFromAsar).not.toBe(true);
    expect(config.electronFuses?.enableEmbeddedAsarIntegrityValidation).not.toBe(true);
    // electron-builder rebuilds native modules for Electron's ABI unless told not to
    expect(config.npmRebuild).toBe(false);

    // the built client, as the app installs it (the tests' alias would give the sources)
    const client = pathToFileURL(`${dir}../daemon/dist/client/index.js`).href;
    const { daemonCommand } = (await import(client)) as typeof import('@svc/daemon/client');
    const script = daemonCommand().args.at(-1)!;
    expect(script).toMatch(/[\\/]daemon[\\/]dist[\\/]bin[\\/]svc-daemon\.js$/);
    expect(script).not.toMatch(/\.asar([\\/]|$)/);
    expect(existsSync(script)).toBe(true);
  });
});
