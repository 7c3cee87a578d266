/**
 * Keys derived from one master secret, and the protection of sensitive values at rest: a keyed HMAC
 * for equality lookup and AES-256-GCM ciphertext where the value must be read back (DESIGN: PANs, SSNs
 * and MICR numbers are never stored in clear).
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, randomFillSync } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
}

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
  };
}

/**
 * The master secret: `COREGATE_SECRET` (64 hex characters) when set, which every instance sharing a
 * database must use; otherwise `<dataDir>/secret.key`, created on first use with mode 0600.
 */
export function loadMasterSecret(dataDir: string, configured?: string): Buffer {
  if (configured) {
    if (!/^[0-9a-fA-F]{64}$/.test(configured)) throw new Error('COREGATE_SECRET must be 64 hexadecimal characters');
    return Buffer.from(configured, 'hex');
  }
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  mkdirSync(dataDir, { recursive: true });
  const master = randomBytes(32);
  writeFileSync(file, `${master.toString('hex')}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return master;
}
