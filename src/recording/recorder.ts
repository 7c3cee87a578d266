/**
 * The gateway's recording of its exchanges with a core (COREGATE_RECORD_DIR; docs/recording.md). The gateway
 * hands each SOAP exchange to `exchange` with the JSON it sent, and reads the core's answer through
 * `tapRead`, which hashes the bytes as they stream. The exchange's request and decoded answer (or its problem)
 * are scrubbed and queued for the cassette once the call is settled; the call itself never waits on it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, type Hash } from 'node:crypto';
import type { RecordingSettings } from '../config.js';
import { Problem } from '../contract/problems.js';
import { cassetteWriter, recordingSecret, type CassetteCounts, type CassetteLine } from './cassette.js';
import { scrubber } from './scrub.js';

/** What names an exchange: the release, the wire operation, the coregate operation. */
export interface ExchangeFacts {
  readonly release: string;
  readonly service: string;
  readonly operation: string;
  readonly family: string;
  readonly name: string;
}

/** How the gateway reads an answer's body (core/transport.ts's AnswerReader, by its shape). */
interface AnswerReader<T> {
  write(chunk: Buffer): void;
  end(): T;
}

export interface RecordingLog {
  warn(facts: Record<string, unknown>, message: string): void;
}

export interface ExchangeRecorder {
  /** Runs one exchange, recording it once it is settled (answered, refused or failed). */
  exchange<T>(facts: () => ExchangeFacts, request: unknown, call: () => Promise<T>): Promise<T>;
  /** The reader of an exchange's answer (taken as the exchange starts), its bytes hashed on their way to `read`'s reader. */
  tapRead<H, T>(read: (head: H) => AnswerReader<T>): (head: H) => AnswerReader<T>;
  counts(): CassetteCounts;
  close(): Promise<void>;
}

/** Dropped lines are logged at most once in this many milliseconds. */
const DROP_LOG_INTERVAL_MS = 10_000;

/**
 * The recorder of gateway mode's settings.
 * @example const recorder = exchangeRecorder(config.recording, app.log);
 */
export function exchangeRecorder(settings: RecordingSettings, log?: RecordingLog): ExchangeRecorder {
  const secret = recordingSecret(settings.dir, settings.secret);
  const scrub = scrubber({ secret, jitterAmounts: settings.jitterAmounts });
  const writer = cassetteWriter(settings.dir, settings, (error) =>
    log?.warn({ error: (error as Error).message }, 'a recording file could not be written: its lines are dropped'),
  );
  /** The hash of the answer of the exchange running in this async context. */
  const answerHash = new AsyncLocalStorage<{ hash?: Hash }>();
  let lastDropLog = 0;

  const append = (line: CassetteLine) => {
    if (writer.append(line)) return;
    const now = Date.now();
    if (now - lastDropLog < DROP_LOG_INTERVAL_MS) return;
    lastDropLog = now;
    log?.warn(
      { dropped: writer.counts().dropped, queueLines: settings.queueLines },
      'the recording queue is full: exchanges are answered and not recorded',
    );
  };

  return {
    async exchange(facts, request, call) {
      const slot: { hash?: Hash } = {};
      const time = new Date().toISOString();
      const started = performance.now();
      const settle = (answer: { answer?: unknown; problem?: unknown }) => {
        try {
          const latencyMs = Math.round(performance.now() - started);
          const problem = answer.problem instanceof Problem ? answer.problem : undefined;
          const line: CassetteLine = {
            ...facts(),
            request: scrub(request),
            ...('answer' in answer ? { answer: scrub(answer.answer) } : {}),
            ...(slot.hash ? { answerSha256: slot.hash.digest('hex') } : {}),
            status: problem?.status ?? (answer.problem ? 500 : 200),
            outcome: problem?.code ?? (answer.problem ? 'INTERNAL' : 'ok'),
            ...(problem ? { detail: problem.detail } : {}),
            ...(problem?.headers['retry-after'] ? { retryAfter: problem.headers['retry-after'] } : {}),
            ...(problem?.core ? { fault: { ...problem.core } } : {}),
            latencyMs,
            time,
          };
          append(line);
        } catch (error) {
          log?.warn({ error: (error as Error).message }, 'an exchange could not be recorded');
        }
      };
      try {
        const answer = await answerHash.run(slot, call);
        settle({ answer });
        return answer;
      } catch (problem) {
        settle({ problem });
        throw problem;
      }
    },
    tapRead(read) {
      // Taken in the exchange's own context: the answer is read in the connection's.
      const slot = answerHash.getStore();
      if (!slot) return read;
      return (head) => {
        const reader = read(head);
        // A read sent once more on a reset connection hashes the answer it got.
        const hash = (slot.hash = createHash('sha256'));
        return {
          write(chunk) {
            hash.update(chunk);
            reader.write(chunk);
          },
          end: () => reader.end(),
        };
      };
    },
    counts: () => writer.counts(),
    close: () => writer.close(),
  };
}
