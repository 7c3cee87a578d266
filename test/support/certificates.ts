/**
 * A small PKI made for a test with openssl: a CA, a server certificate for `core.test` and a client
 * certificate it signed, and a second CA nobody trusts. Files are PEM, in a directory of the test's own.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Pki {
  readonly dir: string;
  readonly caFile: string;
  readonly otherCaFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  /** The server's TLS options: its certificate, and client certificates required and checked against the CA. */
  serverOptions(): { cert: Buffer; key: Buffer; ca: Buffer; requestCert: true; rejectUnauthorized: true };
  remove(): void;
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'coregate-pki-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

  const ca = (name: string, cn: string) =>
    openssl(
      'req',
      '-x509',
      ...EC_KEY,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      `/CN=${cn}`,
    );
  const leaf = (name: string, cn: string, extensions: string) => {
    writeFileSync(file(`${name}.ext`), extensions);
    openssl('req', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  };
  ca('ca', 'coregate test CA');
  ca('other-ca', 'someone else');
  leaf('server', 'core.test', 'subjectAltName=DNS:core.test\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'coregate-gateway', 'extendedKeyUsage=clientAuth\n');

  return {
    dir,
    caFile: file('ca.pem'),
    otherCaFile: file('other-ca.pem'),
    serverCertFile: file('server.pem'),
    serverKeyFile: file('server.key'),
    clientCertFile: file('client.pem'),
    clientKeyFile: file('client.key'),
    serverOptions: () => ({
      cert: readFileSync(file('server.pem')),
      key: readFileSync(file('server.key')),
      ca: readFileSync(file('ca.pem')),
      requestCert: true,
      rejectUnauthorized: true,
    }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
