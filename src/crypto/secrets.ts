/**
 * Keys derived from one master secret, and the protection of sensitive values at rest: a keyed HMAC
 * for equality lookup and AES-256-GCM ciphertext where the value must be read back (DESIGN: PANs, SSNs
 * and MICR numbers are never stored in clear).
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, randomFillSync } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Protection } from '../catalog/index.js';

export interface Secrets {
  /** HMAC-SHA256 of a sensitive value, for indexed equality lookup. */
  lookupHash(kind: Protection, value: string): Buffer;
  /** AES-256-GCM ciphertext: 12-byte IV, 16-byte tag, then the ciphertext. */
  encrypt(value: string): Buffer;
  decrypt(sealed: Uint8Array): string;
  /** A key for a named purpose (paging tokens, credential cache), independent of the others. */
  key(purpose: string): Buffer;
  /** The master key itself, to hand to this process's worker threads (bulk seeding); never stored or sent elsewhere. */
  master(): Buffer;
  /**
   * What a store records of the secret it was created with (store/store-secret.ts): an HMAC of a fixed label
   * under a key derived for this alone. It tells whether a secret is the store's; neither the master key nor
   * any key derived from it can be recovered from it, and it keys nothing.
   */
  fingerprint(): Buffer;
}

/** The label the fingerprint is an HMAC of; a new label would be a new kind of fingerprint. */
const FINGERPRINT_LABEL = 'coregate store fingerprint v1';

const IV_BYTES = 12;
/** IVs drawn per refill: one CSPRNG call per 4,096 encryptions instead of one each (the call dominated the cost). */
const IVS_PER_REFILL = 4096;

/** Fresh random 12-byte IVs, drawn from a buffer refilled from the CSPRNG when it runs out. */
function ivSource(): () => Buffer {
  const pool = Buffer.alloc(IV_BYTES * IVS_PER_REFILL);
  let offset = pool.length;
  return () => {
    if (offset === pool.length) {
      randomFillSync(pool);
      offset = 0;
    }
    offset += IV_BYTES;
    return pool.subarray(offset - IV_BYTES, offset);
  };
}

/** Builds the secrets from a 32-byte master key. */
export function secretsFromMaster(master: Buffer): Secrets {
  const derive = (purpose: string) =>
    Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `coregate:${purpose}`, 32));
  const hmacKey = derive('lookup-hmac');
  const encKey = derive('at-rest-aes-gcm');
  const nextIv = ivSource();
  return {
    lookupHash(kind, value) {
      return createHmac('sha256', hmacKey).update(`${kind}:${value}`).digest();
    },
    encrypt(value) {
      const iv = nextIv();
      const cipher = createCipheriv('aes-256-gcm', encKey, iv);
      const body = cipher.update(value, 'utf8');
      cipher.final();
      return Buffer.concat([iv, cipher.getAuthTag(), body]);
    },
    decrypt(sealed) {
      const bytes = Buffer.from(sealed);
      const decipher = createDecipheriv('aes-256-gcm', encKey, bytes.subarray(0, IV_BYTES));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + 16));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + 16)), decipher.final()]).toString('utf8');
    },
    key: derive,
    master: () => Buffer.from(master),
    fingerprint: () => createHmac('sha256', derive('store-fingerprint')).update(FINGERPRINT_LABEL).digest(),
  };
}

/** Where the master secret came from. */
export type SecretSource =
  /** `COREGATE_SECRET`. */
  | 'setting'
  /** The data dir's `secret.key`, as it was. */
  | 'file'
  /** Generated now into a data dir that had no `secret.key`. */
  | 'generated';

export interface MasterSecret {
  readonly master: Buffer;
  readonly source: SecretSource;
  /** The data dir's `secret.key`, whether or not it is the source. */
  readonly file: string;
  /** Removes `secret.key` if this load generated it (a store that refuses it must not keep it); otherwise nothing. */
  forget(): void;
}

const HEX_SECRET = /^[0-9a-fA-F]{64}$/;

/** The secret held in a data dir's `secret.key`, or undefined when it has none. */
export function readSecretFile(file: string): Buffer | undefined {
  return existsSync(file) ? Buffer.from(readFileSync(file, 'utf8').trim(), 'hex') : undefined;
}

/**
 * The master secret: `COREGATE_SECRET` (64 hex characters) when set, which every instance sharing a
 * database must use; otherwise `<dataDir>/secret.key`, created on first use with mode 0600. It is created
 * whole under a temporary name and linked into place, which fails when another process (a worker started
 * with this one) got there first: then that process's secret is read, and both use the same.
 */
export function loadMasterSecret(dataDir: string, configured?: string): MasterSecret {
  const file = join(dataDir, 'secret.key');
  const loaded = (master: Buffer, source: SecretSource, forget = () => undefined): MasterSecret => ({
    master,
    source,
    file,
    forget,
  });
  if (configured) {
    if (!HEX_SECRET.test(configured)) throw new Error('COREGATE_SECRET must be 64 hexadecimal characters');
    return loaded(Buffer.from(configured, 'hex'), 'setting');
  }
  const existing = readSecretFile(file);
  if (existing) return loaded(existing, 'file');
  mkdirSync(dataDir, { recursive: true });
  const master = randomBytes(32);
  const content = `${master.toString('hex')}\n`;
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    writeFileSync(temporary, content, { mode: 0o600 });
    chmodSync(temporary, 0o600);
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return loaded(readSecretFile(file)!, 'file');
  } finally {
    rmSync(temporary, { force: true });
  }
  // Only while it is still the file this load wrote: never another process's.
  return loaded(master, 'generated', () => {
    if (readSecretFile(file)?.equals(master)) rmSync(file, { force: true });
  });
}
