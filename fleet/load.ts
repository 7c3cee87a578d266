/**
 * Steady mixed load on both fleets through HAProxy, at a modest rate: reader lanes (FindBy, a collateral
 * tree, share holds) and writer lanes, each writer sending keyed share-hold updates one after another and
 * retrying each until it is acknowledged, as a careful client does. Every attempt and every update is
 * recorded, for the scenario's report and for the read-back that proves each acknowledged update landed
 * exactly once.
 */
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { post, type Answer, type Caller } from './client.js';

export type FleetName = 'store' | 'gateway';

/** One request sent (a read, or one attempt of an update). */
export interface Attempt {
  readonly fleet: FleetName;
  readonly operation: string;
  readonly write: boolean;
  readonly outcome: string;
  readonly startedAt: number;
  readonly endedAt: number;
  /** An update's attempt: the update it belongs to. */
  readonly update?: Update;
}

/** One update as the client sees it: its unique value, its key, and whether it was acknowledged. */
export interface Update {
  readonly fleet: FleetName;
  readonly accountNumber: string;
  readonly value: string;
  /** The Idempotency-Key of its latest attempts: a new one after an answer that it may have been applied. */
  key: string;
  /** Acknowledged by reading the record back after an answer that it may have been applied. */
  confirmedByRead: boolean;
  /** When its first attempt was sent. */
  readonly firstSentAt: number;
  acked: boolean;
  attempts: number;
  /** X-Request-Id of each 200 answer: each must have its audit event. */
  readonly ackRequestIds: string[];
  replayed: boolean;
  lastOutcome: string;
}

/** A gateway's answer to the retry that took over a key whose holder never finished (src/http/writes.ts). */
const ABANDONED_KEY = /^The first attempt with this Idempotency-Key ended without an answer/;
/** How an attempt's outcome says it was that answer. */
export const KEY_TAKEN_OVER = '(key taken over)';

export interface Recording {
  readonly attempts: Attempt[];
  readonly updates: Update[];
}

export interface LoadPlan {
  readonly storeUrl: string;
  readonly gatewayUrl: string;
  readonly adminPassword: string;
  /** One token per lane: the FindBy limit is per token, and no lane may reach it. */
  readonly storeReaderTokens: readonly string[];
  readonly storeWriterTokens: readonly string[];
  readonly gatewayReaderTokens: readonly string[];
  readonly gatewayWriterTokens: readonly string[];
}

/**
 * The share whose primary hold (locator 1) a writer lane updates: two lanes per hold, so that an update
 * applied twice shows. Setting a value the record holds already changes nothing and writes no history, so
 * a repeat right after the first application would be invisible; a repeat after the other lane's update
 * writes a second history row for the value (and takes the other lane's value back).
 */
export const writerAccount = (fleet: FleetName, lane: number): string =>
  String((fleet === 'store' ? 101 : 201) + Math.floor(lane / 2)).padStart(10, '0');

/** A read and the check of its answer (a wrong answer counts as a failure). */
interface Read {
  readonly name: string;
  readonly path: string;
  fields(lane: number): Record<string, unknown>;
  expected(body: unknown): boolean;
}

const field = (body: unknown, ...names: string[]): unknown =>
  names.reduce<unknown>((value, name) => (value as Record<string, unknown> | undefined)?.[name], body);

/** docs/demo-data.md: an SSN on two accounts, and the collateral of account 0000000001. */
const FIND_BY_SSN: Read = {
  name: 'findBySSN',
  path: '/gw/627/persistent/findby/findBySSN',
  fields: () => ({ SSN: '384856358' }),
  expected: (body) => JSON.stringify(field(body, 'AccountNumber')) === '["0000000005","0000000013"]',
};
const GET_COLLATERAL: Read = {
  name: 'getCollateral',
  path: '/gw/627/2022.01/collateral/getCollateral',
  fields: () => ({ CollateralNumber: '7000000011' }),
  expected: (body) => field(body, 'Collateral', 'Number') === '7000000011',
};
const shareHoldRead = (fleet: FleetName): Read => ({
  name: 'getShareHoldSelectFields',
  path: '/gw/627/persistent/account/getShareHoldSelectFields',
  fields: (lane) => ({
    AccountNumber: writerAccount(fleet, lane),
    ShareId: '0000',
    ShareHoldLocator: 1,
    SelectableFields: { ShareHoldFields: { Reference1: true } },
  }),
  expected: (body) => typeof field(body, 'ShareHold', 'Reference1') === 'string',
});

export const UPDATE_PATH = '/gw/627/persistent/account/updateShareHoldByID';

/** Each lane's requests per second (the whole load: about 25 a second, and 7 more from the gateways to the core). */
const STORE_READS_PER_SECOND = 4;
const STORE_UPDATES_PER_SECOND = 1.2;
const GATEWAY_READS_PER_SECOND = 2.5;
const GATEWAY_UPDATES_PER_SECOND = 1;
/** An update not acknowledged within this time is given up (and reported). */
const UPDATE_DEADLINE_MS = 90_000;
const MAX_BACKOFF_MS = 2_000;

export interface RunningLoad {
  readonly recording: Recording;
  /** Stops starting new requests; resolves once every update begun is acknowledged or given up. */
  stop(): Promise<void>;
}

/** Starts the lanes; `tag` makes this scenario's update values unique (at most 12 characters). */
export function startLoad(plan: LoadPlan, tag: string): RunningLoad {
  const recording: Recording = { attempts: [], updates: [] };
  const stopping = new AbortController();
  // Every lane's pause listens to it.
  setMaxListeners(64, stopping.signal);
  const pause = (ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => undefined);
  const caller = (token: string): Caller => ({ token, adminPassword: plan.adminPassword });

  const record = (fleet: FleetName, operation: string, answer: Answer, outcome: string, update?: Update) =>
    recording.attempts.push({
      fleet,
      operation,
      write: update !== undefined,
      outcome,
      startedAt: answer.startedAt,
      endedAt: answer.endedAt,
      update,
    });

  async function readerLane(fleet: FleetName, lane: number, token: string, reads: readonly Read[], perSecond: number) {
    const baseUrl = fleet === 'store' ? plan.storeUrl : plan.gatewayUrl;
    for (let turn = lane; !stopping.signal.aborted; turn += 1) {
      const started = Date.now();
      const read = reads[turn % reads.length]!;
      const answer = await post(baseUrl, read.path, caller(token), read.fields(lane));
      const wrong = answer.status === 200 && !read.expected(answer.body);
      record(fleet, read.name, answer, wrong ? 'wrong answer' : answer.outcome);
      await pause(1000 / perSecond - (Date.now() - started));
    }
  }

  async function writerLane(fleet: FleetName, lane: number, token: string, perSecond: number) {
    const baseUrl = fleet === 'store' ? plan.storeUrl : plan.gatewayUrl;
    const accountNumber = writerAccount(fleet, lane);
    for (let sequence = 1; !stopping.signal.aborted; sequence += 1) {
      const started = Date.now();
      const value = `${tag}${fleet[0]}${lane}-${sequence}`;
      const update: Update = {
        fleet,
        accountNumber,
        value,
        key: `fleet-${value}`,
        firstSentAt: started,
        acked: false,
        attempts: 0,
        ackRequestIds: [],
        replayed: false,
        lastOutcome: '',
        confirmedByRead: false,
      };
      recording.updates.push(update);
      // Retried until acknowledged, with the same key and body, even after the load is told to stop.
      for (let backoff = 100; !update.acked && Date.now() - started < UPDATE_DEADLINE_MS;) {
        const answer = await post(
          baseUrl,
          UPDATE_PATH,
          caller(token),
          {
            AccountNumber: accountNumber,
            ShareId: '0000',
            ShareHoldLocator: 1,
            ShareHoldFields: { Reference1: value },
          },
          { 'idempotency-key': update.key },
        );
        update.attempts += 1;
        const applied =
          answer.status === 200 && field(answer.body, 'UpdateStatus', 'isAllFieldsUpdateSuccess') === true;
        const outcome =
          answer.status === 200 && !applied
            ? 'update refused a field'
            : ABANDONED_KEY.test(String(field(answer.body, 'detail')))
              ? `${answer.outcome} ${KEY_TAKEN_OVER}`
              : answer.outcome;
        record(fleet, 'updateShareHoldByID', answer, outcome, update);
        update.lastOutcome = outcome;
        if (applied) {
          update.acked = true;
          update.replayed ||= answer.replayed;
          if (answer.requestId) update.ackRequestIds.push(answer.requestId);
          break;
        }
        // A request the API refuses as such will be refused again: a bug, reported, not retried.
        if (answer.status === 400 || answer.status === 422 || answer.status === 200) break;
        // Sent and unanswered, it may have been applied: its key keeps saying so. A careful client reads the
        // record, and sends the update again, with a new key, only if it does not hold the value.
        if (/may have been applied/.test(String(field(answer.body, 'detail')))) {
          const read = await post(baseUrl, shareHoldRead(fleet).path, caller(token), shareHoldRead(fleet).fields(lane));
          if (read.status === 200 && field(read.body, 'ShareHold', 'Reference1') === value) {
            update.acked = true;
            update.confirmedByRead = true;
            break;
          }
          if (read.status === 200) update.key = `${update.key}+`;
        }
        const wait = answer.retryAfterSeconds !== undefined ? answer.retryAfterSeconds * 1000 : backoff;
        await sleep(Math.min(wait, MAX_BACKOFF_MS));
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
      await pause(1000 / perSecond - (Date.now() - started));
    }
  }

  const lanes = [
    ...plan.storeReaderTokens.map((token, lane) =>
      readerLane(
        'store',
        lane,
        token,
        [FIND_BY_SSN, GET_COLLATERAL, shareHoldRead('store'), shareHoldRead('store')],
        STORE_READS_PER_SECOND,
      ),
    ),
    ...plan.storeWriterTokens.map((token, lane) => writerLane('store', lane, token, STORE_UPDATES_PER_SECOND)),
    ...plan.gatewayReaderTokens.map((token, lane) =>
      readerLane(
        'gateway',
        lane,
        token,
        [GET_COLLATERAL, shareHoldRead('gateway'), FIND_BY_SSN, shareHoldRead('gateway'), GET_COLLATERAL],
        GATEWAY_READS_PER_SECOND,
      ),
    ),
    ...plan.gatewayWriterTokens.map((token, lane) => writerLane('gateway', lane, token, GATEWAY_UPDATES_PER_SECOND)),
  ];
  return {
    recording,
    async stop() {
      stopping.abort();
      await Promise.all(lanes);
    },
  };
}
