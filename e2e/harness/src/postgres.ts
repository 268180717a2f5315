/**
 * A throwaway PostgreSQL server for tests: initdb into a temp dir, `postgres` on a free
 * port of 127.0.0.1 (its unix socket in the temp dir too), one database per caller, and
 * everything removed at stop(). Start it once per test file (beforeAll), not per test.
 * initdb and postgres refuse to run as root: as root they run as the `postgres` OS user
 * (or `nobody`) through setpriv, which execs, so the pid we hold is the server's own.
 * Binaries: SVC_TEST_PG_BIN, else the newest /usr/lib/postgresql/<n>/bin (Debian's
 * `postgresql` package; scripts/setup.sh installs it).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, tempDir, until } from './index.js';

function binDir(): string | undefined {
  const env = process.env.SVC_TEST_PG_BIN;
  if (env) return existsSync(join(env, 'postgres')) ? env : undefined;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/** The OS user to run the server as when we are root. */
function serverUser(): { uid: number; gid: number; name: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
      return { uid, gid, name };
    } catch {
      // no such user: try the next
    }
  }
  throw new Error('running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as');
}

/** Why PostgreSQL tests cannot run here, or undefined when they can. */
export function postgresUnavailable(): string | undefined {
  return binDir() === undefined
    ? 'PostgreSQL server binaries not found (install Debian\'s "postgresql" package: sudo apt-get install -y postgresql; or set SVC_TEST_PG_BIN)'
    : undefined;
}

export interface PostgresDatabase {
  /** postgres:// URL of the database (trust authentication on loopback: no password) */
  url: string;
  /** a file (0600) holding the URL, for SVC_RELAY_LEDGER_DSN_FILE */
  dsnFile: string;
  name: string;
}

export interface PostgresServer {
  port: number;
  /** postgres:// URL of the superuser on the `postgres` database (creates databases) */
  adminUrl: string;
  /** the server's temp dir (removed at stop) */
  dir: string;
  /** Creates a new empty database. */
  createDatabase(name?: string): Promise<PostgresDatabase>;
  stop(): Promise<void>;
}

let databases = 0;

/** Where the global setup tells the workers about the run's shared server (SVC_TEST_LEDGER=postgres). */
export const SHARED_PG_ENV = { adminUrl: 'SVC_TEST_PG_ADMIN_URL', dsnDir: 'SVC_TEST_PG_DSN_DIR' } as const;

/**
 * Creates an empty database on the server `adminUrl` names, and a DSN file for it in
 * `dsnDir` (a fresh temp dir by default). An existing database of that name is reused
 * (several test processes may ask for the same one at once).
 */
export async function createDatabaseOn(
  adminUrl: string,
  name = `svc_test_${process.pid}_${++databases}`,
  dsnDir = tempDir('svc-pg-dsn-'),
): Promise<PostgresDatabase> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } catch (err) {
    if ((err as { code?: string }).code !== '42P04') throw err; // 42P04: duplicate_database
  } finally {
    await c.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const dsnFile = join(dsnDir, `${name}.dsn`);
  writeFileSync(dsnFile, `${url.href}\n`, { mode: 0o600 });
  return { url: url.href, dsnFile, name };
}

export interface StartPostgresOptions {
  /** default 60: enough for one test file's relays */
  maxConnections?: number;
}

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const bin = binDir();
  if (!bin) throw new Error(postgresUnavailable());
  const user = serverUser();
  const dir = tempDir('svc-pg-');
  const data = join(dir, 'data');
  const socketDir = join(dir, 'sock');
  mkdirSync(socketDir);
  if (user) {
    chownSync(dir, user.uid, user.gid);
    chownSync(socketDir, user.uid, user.gid);
  }
  const as = (cmd: string, args: string[]): [string, string[]] =>
    user
      ? ['setpriv', [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', join(bin, cmd), ...args]]
      : [join(bin, cmd), args];
  const superuser = 'svc';
  const [initCmd, initArgs] = as('initdb', [
    '-D',
    data,
    '-U',
    superuser,
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  execFileSync(initCmd, initArgs, { stdio: 'pipe', cwd: dir });
  const port = await freePort();
  const [cmd, args] = as('postgres', [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    socketDir,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    `max_connections=${options.maxConnections ?? 60}`,
    // small: every test file that needs PostgreSQL starts its own, often several at once
    '-c',
    'shared_buffers=16MB',
  ]);
  const log: string[] = [];
  const child: ChildProcess = spawn(cmd, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (d: Buffer) => log.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => log.push(d.toString()));
  let exited = false;
  const gone = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  // a test process that dies leaves no server behind (immediate shutdown)
  const onExit = () => child.kill('SIGQUIT');
  process.once('exit', onExit);
  const admin = `postgres://${superuser}@127.0.0.1:${port}/postgres`;
  try {
    await until(
      async () => {
        if (exited) throw new Error(`postgres exited at start:\n${log.join('')}`);
        const c = new pg.Client({ connectionString: admin });
        try {
          await c.connect();
          await c.end();
          return true;
        } catch {
          await c.end().catch(() => undefined);
          return false;
        }
      },
      30_000,
      'postgres accepting connections',
      50,
    );
  } catch (err) {
    child.kill('SIGQUIT');
    throw err;
  }
  return {
    port,
    adminUrl: admin,
    dir,
    createDatabase: (name) => createDatabaseOn(admin, name),
    async stop() {
      process.removeListener('exit', onExit);
      if (!exited) {
        child.kill('SIGINT'); // fast shutdown
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A PostgreSQL server for a test file that only creates databases on it: the run's shared
 * one when the global setup started it (SVC_TEST_LEDGER=postgres; stop() then leaves it
 * running), else one of its own. A file that stops or breaks its server starts its own.
 */
export type TestPostgres = Pick<PostgresServer, 'createDatabase' | 'stop'>;

export async function testPostgres(): Promise<TestPostgres> {
  const adminUrl = process.env[SHARED_PG_ENV.adminUrl];
  const dsnDir = process.env[SHARED_PG_ENV.dsnDir];
  if (adminUrl && dsnDir) {
    return { createDatabase: (name) => createDatabaseOn(adminUrl, name, dsnDir), stop: async () => undefined };
  }
  return startPostgres();
}
