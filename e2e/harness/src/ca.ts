/**
 * A throw-away certificate authority for tests that need real TLS.
 *
 * It runs the openssl CLI (openssl 3) in a fresh temporary directory: a P-256 CA that is
 * valid for one day, and a server certificate signed by it for `127.0.0.1`, `::1` and
 * `localhost` (subjectAltName, serverAuth). Elliptic-curve keys keep it fast (tens of
 * milliseconds). The directory is removed before the promise settles; only PEM text is
 * returned.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestCertificates {
  /** The CA certificate: what a client adds to its trusted CAs. */
  caPem: string;
  /** The server certificate (leaf only), signed by the CA. */
  certPem: string;
  /** The server's private key (PKCS#8 PEM). */
  keyPem: string;
}

export interface TestCertificateOptions {
  /** Names the server certificate is valid for; IP addresses and DNS names. Default 127.0.0.1, ::1, localhost. */
  hosts?: string[];
  /** Common name of the CA. Default "svc test CA". */
  caName?: string;
}

const IP = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-f:]*:[0-9a-f:]*)$/i;

export async function generateTestCertificates(options: TestCertificateOptions = {}): Promise<TestCertificates> {
  const hosts = options.hosts ?? ['127.0.0.1', '::1', 'localhost'];
  const caName = options.caName ?? 'svc test CA';
  const dir = await mkdtemp(join(tmpdir(), 'svc-test-ca-'));
  const file = (name: string) => join(dir, name);
  const openssl = (args: string[]) => run('openssl', args, { cwd: dir });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  try {
    await openssl([
      'req',
      '-x509',
      ...ecKey,
      '-keyout',
      file('ca.key'),
      '-out',
      file('ca.pem'),
      '-days',
      '1',
      '-subj',
      `/CN=${caName}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    await openssl([
      'req',
      '-new',
      ...ecKey,
      '-keyout',
      file('server.key'),
      '-out',
      file('server.csr'),
      '-subj',
      `/CN=${hosts[0] ?? 'localhost'}`,
    ]);
    const altNames = hosts.map((h) => (IP.test(h) ? `IP:${h}` : `DNS:${h}`)).join(',');
    await writeFile(
      file('server.ext'),
      [
        'basicConstraints=critical,CA:FALSE',
        'keyUsage=critical,digitalSignature',
        'extendedKeyUsage=serverAuth',
        `subjectAltName=${altNames}`,
        '',
      ].join('\n'),
    );
    await openssl([
      'x509',
      '-req',
      '-in',
      file('server.csr'),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-out',
      file('server.pem'),
      '-days',
      '1',
      '-extfile',
      file('server.ext'),
    ]);
    const [caPem, certPem, keyPem] = await Promise.all([
      readFile(file('ca.pem'), 'utf8'),
      readFile(file('server.pem'), 'utf8'),
      readFile(file('server.key'), 'utf8'),
    ]);
    return { caPem, certPem, keyPem };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
