/**
 * A throwaway PostgreSQL server for tests: initdb into a temp dir, `postgres` on a free
 * port of 127.0.0.1 (its unix socket in the temp dir too), one database per caller, and
 * everything removed at stop(). Tests take the run's shared one through testPostgres();
 * a file that stops its server starts its own (once per file, beforeAll, not per test).
 * initdb and postgres refuse to run as root: as root they run as the `postgres` OS user
 * (or `nobody`) through setpriv, which execs, so the pid we hold is the server's own.
 * Binaries: SVC_TEST_PG_BIN, else the newest /usr/lib/postgresql/<n>/bin (Debian's
 * `postgresql` package; scripts/setup.sh installs it).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, signalIfAlive, tempDir, until } from './index.js';

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
  /** the server's process id */
  pid: number;
  /** postgres:// URL of the superuser on the `postgres` database (creates databases) */
  adminUrl: string;
  /** the server's temp dir (removed at stop) */
  dir: string;
  /** Creates a new empty database. */
  createDatabase(name?: string): Promise<PostgresDatabase>;
  stop(): Promise<void>;
}

let databases = 0;

/**
 * Where the global setup tells the workers about the run's shared server: a dir in which
 * the first worker that asks starts it (`onDemandDir`, see testPostgres).
 */
export const SHARED_PG_ENV = {
  onDemandDir: 'SVC_TEST_PG_ON_DEMAND_DIR',
} as const;

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

/**
 * Roles in this group log in with their password (scram-sha-256); every other role is
 * trusted. Create it (NOLOGIN) and a member role WITH PASSWORD to test a wrong password.
 */
export const PASSWORD_LOGIN_GROUP = 'svc_password_login';

export interface StartPostgresOptions {
  /** default 60: enough for one test file's relays */
  maxConnections?: number;
  /**
   * The server outlives this process (detached, its log in a file): a worker starts the
   * run's shared server, and the global setup's teardown stops it by its pid.
   */
  outliveProcess?: boolean;
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
  // Everyone is trusted, but for members of PASSWORD_LOGIN_GROUP (none unless a test makes
  // one): their passwords are checked, so a wrong one is refused as a real server would.
  // Rewritten in place, the file keeps its owner.
  const hba = join(data, 'pg_hba.conf');
  writeFileSync(hba, `host all +${PASSWORD_LOGIN_GROUP} 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`);
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
    // small: a file that stops its server starts its own, besides the run's shared one
    '-c',
    'shared_buffers=16MB',
  ]);
  const logFile = join(dir, 'postgres.log');
  const logHandle = await open(logFile, 'a');
  const child: ChildProcess = spawn(cmd, args, {
    cwd: dir,
    stdio: ['ignore', logHandle.fd, logHandle.fd],
    detached: options.outliveProcess === true,
  });
  await logHandle.close(); // the server has its own copy
  const log = () => readFileSync(logFile, 'utf8');
  let exited = false;
  const gone = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  // a test process that dies leaves no server behind (immediate shutdown), unless the
  // server is meant to outlive it (then whoever stops it holds its pid)
  const onExit = () => child.kill('SIGQUIT');
  if (options.outliveProcess) child.unref();
  else process.once('exit', onExit);
  const admin = `postgres://${superuser}@127.0.0.1:${port}/postgres`;
  try {
    await until(
      async () => {
        if (exited) throw new Error(`postgres exited at start:\n${log()}`);
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
    pid: child.pid as number,
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
 * one (stop() then leaves it running), else one of its own. The first file of the run that
 * asks starts the shared one, so a run without PostgreSQL tests pays nothing for it (an
 * initdb and a server per file cost ~1 s of CPU each). A file that stops or breaks its
 * server starts its own (startPostgres); so does a test process outside vitest.
 */
export type TestPostgres = Pick<PostgresServer, 'createDatabase' | 'stop'>;

export async function testPostgres(): Promise<TestPostgres> {
  const onDemandDir = process.env[SHARED_PG_ENV.onDemandDir];
  if (onDemandDir) {
    onDemand ??= serverOnDemand(onDemandDir);
    const info = await onDemand;
    return shared(info.adminUrl, info.dsnDir);
  }
  return startPostgres();
}

const shared = (adminUrl: string, dsnDir: string): TestPostgres => ({
  createDatabase: (name) => createDatabaseOn(adminUrl, name, dsnDir),
  stop: async () => undefined,
});

interface OnDemandServer {
  adminUrl: string;
  dsnDir: string;
  pid: number;
  dir: string;
}

/** This worker's way to the run's on-demand server (one look-up per worker). */
let onDemand: Promise<OnDemandServer> | undefined;

const READY = 'server.json';
const FAILED = 'failed';

/** The run's on-demand server: started by the first worker to take the lock, awaited by the rest. */
export async function serverOnDemand(runDir: string): Promise<OnDemandServer> {
  try {
    mkdirSync(join(runDir, 'starting')); // atomic: exactly one worker of the run gets it
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return await until(() => readOnDemand(runDir), 60_000, "the run's PostgreSQL server", 50);
  }
  try {
    const server = await startPostgres({ maxConnections: 400, outliveProcess: true });
    const dsnDir = join(runDir, 'dsn');
    mkdirSync(dsnDir, { mode: 0o700 });
    const info: OnDemandServer = { adminUrl: server.adminUrl, dsnDir, pid: server.pid, dir: server.dir };
    writeFileSync(join(runDir, `${READY}.tmp`), JSON.stringify(info));
    await rename(join(runDir, `${READY}.tmp`), join(runDir, READY)); // readers never see half of it
    return info;
  } catch (err) {
    writeFileSync(join(runDir, FAILED), String(err));
    throw err;
  }
}

function readOnDemand(runDir: string): OnDemandServer | undefined {
  if (existsSync(join(runDir, FAILED))) throw new Error(readFileSync(join(runDir, FAILED), 'utf8'));
  if (!existsSync(join(runDir, READY))) return undefined;
  return JSON.parse(readFileSync(join(runDir, READY), 'utf8')) as OnDemandServer;
}

/** Whether `pid` runs (an exited server its parent has not reaped yet does not). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc: signal 0 is all we know
  }
};

/**
 * Stops the server a worker started in `runDir` (if one did) and removes it and `runDir`:
 * the global setup's teardown.
 */
export async function stopServerOnDemand(runDir: string): Promise<void> {
  // a worker may still be starting it when the run ends early
  if (existsSync(join(runDir, 'starting'))) {
    await until(() => existsSync(join(runDir, READY)) || existsSync(join(runDir, FAILED)), 60_000, 'postgres started');
  }
  const info = existsSync(join(runDir, READY)) ? readOnDemand(runDir) : undefined;
  if (info) {
    signalIfAlive(info.pid, 'SIGINT'); // fast shutdown
    await until(() => !alive(info.pid), 30_000, 'postgres stopped', 50);
    rmSync(info.dir, { recursive: true, force: true });
  }
  rmSync(runDir, { recursive: true, force: true });
}

/** For a process exit without teardown: kills the on-demand server at once (immediate shutdown). */
export function killServerOnDemand(runDir: string): void {
  try {
    const info = readOnDemand(runDir);
    if (info) signalIfAlive(info.pid, 'SIGQUIT');
  } catch {
    // no server, or it failed to start: nothing to kill
  }
}
