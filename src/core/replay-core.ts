/**
 * `coregate recording replay` (docs/recording.md, "Replay"): a stateless core that answers what a cassette
 * recorded. Each operation goes through the gateway's own forwarding, so it asks for the exchanges the
 * gateway asked the real core for; each exchange is matched to a recorded one on its operation and its
 * request as recorded (credentials and tokens left out, member values already pseudonyms), else on its
 * operation and key fields alone (account, share, locator, SSN, card…). The recorded answer, fault or
 * failure is given after the recorded latency; repeated requests take the recorded answers in turn, the
 * last one again once they run out. A request nothing matches is 404 NOT_FOUND, and kept for the report.
 */
import type { TSchema } from 'typebox';
import { KNOWN_FACTS } from '../catalog/symxchange/index.js';
import { DEFAULT_SYM } from '../config.js';
import { canonicalJson } from '../contract/canonical-json.js';
import { Problem, type CoreFaultDetail, type ProblemCode } from '../contract/problems.js';
import type { AnyOperation } from '../operations/types.js';
import type { CassetteLine } from '../recording/cassette.js';
import { recordedShape } from '../recording/scrub.js';
import { recordingSensitivity, PSEUDONYMOUS } from '../catalog/recording-fields.js';
import { createSymxCodec } from '../symxchange/codec.js';
import type { Core } from './core.js';
import { createForwarding } from './forwarding.js';

type JsonObject = Record<string, unknown>;

export interface ReplayOptions {
  readonly operations: readonly AnyOperation[];
  readonly schemas: readonly TSchema[];
  readonly listMaximum: number;
  readonly pageMaximum: number;
  /** Wait the recorded latency before each answer (the default). */
  readonly latency?: boolean;
}

/** A request the replay could not match: its operation and its key fields as they came. */
export interface UnmatchedRequest {
  readonly operation: string;
  readonly keys: string;
  readonly count: number;
}

export interface ReplayCore extends Core {
  /** The SymXchange release the cassette was recorded from. */
  readonly release: string;
  unmatched(): readonly UnmatchedRequest[];
}

/** The key fields of a request: its identifiers (member data as pseudonyms, locators, ids), in one text. */
function keyFields(request: unknown): string {
  const keys: JsonObject = {};
  const visit = (value: unknown, name: string | undefined) => {
    if (Array.isArray(value)) return value.forEach((item) => visit(item, name));
    if (value !== null && typeof value === 'object') {
      for (const [child, item] of Object.entries(value)) visit(item, child);
      return;
    }
    if (name === undefined) return;
    const sensitivity = recordingSensitivity(name);
    const identifies =
      (sensitivity !== undefined && sensitivity !== 'text' && PSEUDONYMOUS.has(sensitivity)) ||
      /(Locator|ShareId|LookupType|GlobalSequence(Date)?)$/.test(name);
    if (identifies && (typeof value === 'string' || typeof value === 'number')) keys[name] = value;
  };
  visit(request, undefined);
  return canonicalJson(keys);
}

/** The recorded answers of one key, served in turn. */
class Takes {
  private next = 0;
  constructor(readonly lines: CassetteLine[]) {}
  take(): CassetteLine {
    const line = this.lines[Math.min(this.next, this.lines.length - 1)]!;
    this.next += 1;
    return line;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The replay of a cassette's lines.
 * @example const core = replayCore(lines, { operations: CORE_OPERATIONS, schemas: SHARED_SCHEMAS, listMaximum: 1000, pageMaximum: 1000 });
 */
export function replayCore(lines: readonly CassetteLine[], options: ReplayOptions): ReplayCore {
  const release = lines[0]?.release ?? '3.0';
  // A release coregate does not know is replayed as 3.0 speaks it: the exchanges are JSON already.
  const facts = KNOWN_FACTS.find((f) => f.release.release === release) ?? KNOWN_FACTS[0]!;
  const codec = createSymxCodec({ operations: options.operations, schemas: options.schemas, facts });
  const forwarding = createForwarding(options.operations, codec.mapping, options);
  const exact = new Map<string, Takes>();
  const byKeys = new Map<string, Takes>();
  const add = (map: Map<string, Takes>, key: string, line: CassetteLine) => {
    const takes = map.get(key);
    if (takes) takes.lines.push(line);
    else map.set(key, new Takes([line]));
  };
  for (const line of lines) {
    const operation = `${line.family} ${line.name}`;
    add(exact, `${operation} ${canonicalJson(line.request)}`, line);
    add(byKeys, `${operation} ${keyFields(line.request)}`, line);
  }
  const unmatched = new Map<string, { operation: string; keys: string; count: number }>();

  async function recorded(operation: AnyOperation, body: JsonObject): Promise<JsonObject> {
    const name = `${operation.family} ${operation.name}`;
    const shape = recordedShape(body);
    const keys = keyFields(shape);
    const takes = exact.get(`${name} ${canonicalJson(shape)}`) ?? byKeys.get(`${name} ${keys}`);
    if (!takes) {
      const key = `${name} ${keys}`;
      const seen = unmatched.get(key);
      unmatched.set(key, { operation: name, keys, count: (seen?.count ?? 0) + 1 });
      throw new Problem(404, 'NOT_FOUND', `The recording has no ${operation.name} exchange with these key fields`);
    }
    const line = takes.take();
    if (options.latency !== false && line.latencyMs > 0) await sleep(line.latencyMs);
    if (line.outcome === 'ok') return (line.answer ?? {}) as JsonObject;
    throw new Problem(
      line.status,
      line.outcome as ProblemCode,
      line.detail ?? 'The core refused the call',
      undefined,
      line.retryAfter ? { 'retry-after': line.retryAfter } : {},
      line.fault as CoreFaultDetail | undefined,
    );
  }

  return {
    kind: 'symxchange',
    syms: [DEFAULT_SYM],
    verifiesCredentials: true,
    release,
    answer: (operation, _context, body) => forwarding.answer(operation, body as JsonObject, recorded),
    readiness: () => ({ ready: true, detail: `replay of a SymXchange ${release} recording` }),
    circuits: () => new Map(),
    unmatched: () => [...unmatched.values()],
    close: async () => undefined,
  };
}
