/**
 * A worker thread that encodes account ranges to COPY text (see `encode.ts`). It receives the master key
 * once, as workerData, and answers each `{ seed, range }` message with one `EncodedChunk`, in order.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { secretsFromMaster } from '../crypto/secrets.js';
import { encodeChunk, type AccountRange } from './encode.js';

export interface EncoderJob {
  readonly seed: number;
  readonly range: AccountRange;
}

const secrets = secretsFromMaster(Buffer.from(workerData as Uint8Array));

parentPort?.on('message', ({ seed, range }: EncoderJob) => {
  parentPort?.postMessage(encodeChunk(seed, range, secrets));
});
