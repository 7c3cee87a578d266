/**
 * What each scenario is checked against besides its failed requests: no stale read after a write through
 * another instance (probes that write on one instance and read on another, directly), the rate limit
 * shared across the fleet (a fresh token hammered through every instance), and every acknowledged update
 * stored exactly once (read back from the databases: file-maintenance history, idempotency keys, audit).
 */
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { post, type Caller } from './client.js';
import type { FleetName, Update } from './load.js';

/** An instance a probe may address directly, while the scenario says it serves. */
export interface Addressable {
  readonly name: string;
  readonly url: string;
}

export interface StaleProbeResult {
  readonly fleet: FleetName;
  /** Write-then-read pairs completed (write acknowledged, reads answered). */
  readonly checks: number;
  readonly stale: number;
  /** Pairs cut short because an instance stopped or failed under them (not stale reads). */
  readonly interrupted: number;
  readonly details: string[];
}

export interface StaleProbe {
  stop(): Promise<StaleProbeResult>;
}

const findBySsn = '/gw/627/persistent/findby/findBySSN';
const accountsOf = (body: unknown): string[] => {
  const accounts = (body as { AccountNumber?: unknown } | undefined)?.AccountNumber;
  return Array.isArray(accounts) ? accounts.map(String) : [];
};

/** The share name whose SSN the store probe moves (docs/demo-data.md: account 1, share 0000, name locator 3). */
const NAME_TARGET = { AccountNumber: '0000000001', ShareId: '0000', ShareNameLocator: 3 };
/** The share hold the gateway probe writes (no lane writes it). */
const HOLD_TARGET = { AccountNumber: '0000000300', ShareId: '0000', ShareHoldLocator: 1 };

/**
 * Store fleet: each round moves the name's SSN to a fresh one through instance A, after instance B has
 * answered FindBy for the new SSN (nobody) and for the previous one (the account), so that B holds both
 * answers in its cache; B must then answer the new SSN with the account and the previous one with nobody.
 * A and B swap every round. `serving` names the instances up now.
 */
export function startStoreStaleProbe(serving: () => Addressable[], caller: Caller, firstSsn: number): StaleProbe {
  const result = { fleet: 'store' as const, checks: 0, stale: 0, interrupted: 0, details: [] as string[] };
  let stopped = false;
  const running = (async () => {
    let previous: string | undefined;
    for (let round = 0; !stopped; round += 1) {
      const started = Date.now();
      const up = serving();
      if (up.length >= 2) {
        const [writer, reader] = round % 2 === 0 ? [up[0]!, up[1]!] : [up[1]!, up[0]!];
        const ssn = `9${String(firstSsn + round)
          .padStart(8, '0')
          .slice(-8)}`;
        const outcome = await staleRound(writer, reader, caller, ssn, previous);
        if (outcome === 'interrupted') result.interrupted += 1;
        else {
          result.checks += 1;
          previous = ssn;
          if (outcome !== 'fresh') {
            result.stale += 1;
            result.details.push(outcome);
          }
        }
      }
      await sleep(Math.max(0, 2000 - (Date.now() - started)));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await running;
      return result;
    },
  };
}

async function staleRound(
  writer: Addressable,
  reader: Addressable,
  caller: Caller,
  ssn: string,
  previous: string | undefined,
): Promise<'fresh' | 'interrupted' | string> {
  const account = NAME_TARGET.AccountNumber;
  const before = await post(reader.url, findBySsn, caller, { SSN: ssn });
  const beforePrevious = previous ? await post(reader.url, findBySsn, caller, { SSN: previous }) : undefined;
  if (before.status !== 200 || (beforePrevious && beforePrevious.status !== 200)) return 'interrupted';
  const write = await post(writer.url, '/gw/627/persistent/account/updateShareNameByID', caller, {
    ...NAME_TARGET,
    ShareNameFields: { Ssn: ssn },
  });
  if (write.status !== 200) return 'interrupted';
  const after = await post(reader.url, findBySsn, caller, { SSN: ssn });
  const afterPrevious = previous ? await post(reader.url, findBySsn, caller, { SSN: previous }) : undefined;
  if (after.status !== 200 || (afterPrevious && afterPrevious.status !== 200)) return 'interrupted';
  if (!accountsOf(after.body).includes(account))
    return `${reader.name} answered SSN ${ssn} without ${account} after ${writer.name} committed it`;
  if (afterPrevious && accountsOf(afterPrevious.body).includes(account))
    return `${reader.name} still answered the previous SSN with ${account} after ${writer.name} moved it`;
  return 'fresh';
}

/**
 * Gateway fleet: each round writes a fresh value to a share hold through gateway A (its core: the store
 * fleet through HAProxy) and reads it back through gateway B.
 */
export function startGatewayStaleProbe(serving: () => Addressable[], caller: Caller, tag: string): StaleProbe {
  const result = { fleet: 'gateway' as const, checks: 0, stale: 0, interrupted: 0, details: [] as string[] };
  let stopped = false;
  const running = (async () => {
    for (let round = 0; !stopped; round += 1) {
      const started = Date.now();
      const up = serving();
      if (up.length >= 2) {
        const [writer, reader] = round % 2 === 0 ? [up[0]!, up[1]!] : [up[1]!, up[0]!];
        const value = `${tag}probe-${round}`;
        const write = await post(writer.url, '/gw/627/persistent/account/updateShareHoldByID', caller, {
          ...HOLD_TARGET,
          ShareHoldFields: { Reference1: value },
        });
        const read =
          write.status === 200
            ? await post(reader.url, '/gw/627/persistent/account/getShareHoldSelectFields', caller, {
                ...HOLD_TARGET,
                SelectableFields: { ShareHoldFields: { Reference1: true } },
              })
            : undefined;
        if (!read || read.status !== 200) result.interrupted += 1;
        else {
          result.checks += 1;
          const seen = (read.body as { ShareHold?: { Reference1?: unknown } }).ShareHold?.Reference1;
          if (seen !== value) {
            result.stale += 1;
            result.details.push(`${reader.name} read "${String(seen)}" after ${writer.name} wrote "${value}"`);
          }
        }
      }
      await sleep(Math.max(0, 1000 - (Date.now() - started)));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await running;
      return result;
    },
  };
}

export interface RateResult {
  readonly fleet: FleetName;
  readonly limitPerMinute: number;
  readonly sent: number;
  /** Answers the fleet's limiter let through (anything but 429). */
  readonly allowed: number;
  readonly refused: number;
  /** What one limit shared by the whole fleet allows over the hammer's span (GCRA: the burst, then limit/60 a second). */
  readonly expected: number;
  /** allowed / expected − 1. */
  readonly deviation: number;
  readonly outcomes: Readonly<Record<string, number>>;
}

/**
 * Hammers FindBy with a fresh token through every instance of a fleet in turn (directly, not through
 * HAProxy, so that each instance surely takes its share), at about twice what the limit allows.
 */
export async function hammerRateLimit(options: {
  fleet: FleetName;
  instances: readonly Addressable[];
  caller: Caller;
  limitPerMinute: number;
  durationMs: number;
}): Promise<RateResult> {
  const { instances, caller, limitPerMinute, durationMs } = options;
  const perSecond = (2 * (limitPerMinute + (limitPerMinute / 60) * (durationMs / 1000))) / (durationMs / 1000);
  const outcomes: Record<string, number> = {};
  let sent = 0;
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  const started = Date.now();
  const inFlight = new Set<Promise<void>>();
  for (let index = 0; Date.now() - started < durationMs; index += 1) {
    const due = started + (index * 1000) / perSecond;
    if (due > Date.now()) await sleep(due - Date.now());
    if (inFlight.size >= 32) await Promise.race(inFlight);
    const instance = instances[index % instances.length]!;
    sent += 1;
    const request = post(instance.url, findBySsn, caller, { SSN: '384856358' }).then((answer) => {
      first = Math.min(first, answer.startedAt);
      last = Math.max(last, answer.startedAt);
      const outcome = answer.status === 429 ? 'refused' : answer.outcome;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    });
    const tracked: Promise<void> = request.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  }
  await Promise.all(inFlight);
  const refused = outcomes.refused ?? 0;
  const allowed = sent - refused;
  const expected = limitPerMinute + Math.floor(((last - first) / 60_000) * limitPerMinute);
  return {
    fleet: options.fleet,
    limitPerMinute,
    sent,
    allowed,
    refused,
    expected,
    deviation: allowed / expected - 1,
    outcomes,
  };
}

export interface UpdateCheck {
  readonly fleet: FleetName;
  readonly sent: number;
  readonly acked: number;
  /** Updates the client gave up on: each is in the history at most once. */
  readonly unacked: number;
  /** Acknowledged updates missing from the file-maintenance history, or in it more than once. */
  readonly lost: string[];
  readonly duplicated: string[];
  /** Unacknowledged updates in the history more than once. */
  readonly unackedDuplicated: string[];
  /** Acknowledged updates whose Idempotency-Key is not stored completed (status 200). */
  readonly keysMissing: string[];
  /** Acknowledging answers (X-Request-Id) without their audit event. */
  readonly auditMissing: string[];
  /** Holds whose value is not the one their file-maintenance history last wrote. */
  readonly finalMismatch: string[];
  /** Updates acknowledged with a replayed answer (a retry after the first attempt had committed). */
  readonly replayed: number;
}

/**
 * Reads back one fleet's updates. `coreUrl` is the store database (where the history is, for both
 * fleets); `ownUrl` the fleet's own (keys and audit: the store's, or the gateways').
 */
export async function verifyUpdates(
  fleet: FleetName,
  updates: readonly Update[],
  coreUrl: string,
  ownUrl: string,
): Promise<UpdateCheck> {
  const core = new pg.Client({ connectionString: coreUrl });
  const own = new pg.Client({ connectionString: ownUrl });
  await Promise.all([core.connect(), own.connect()]);
  try {
    const values = updates.map((update) => update.value);
    const history = await core.query<{ value: string; rows: string }>(
      `select new_character as value, count(*) as rows from account_fm_history
        where record_name = 'ShareHold' and field_name = 'Reference1' and new_character = any($1) group by 1`,
      [values],
    );
    const rows = new Map(history.rows.map((row) => [row.value, Number(row.rows)]));
    const acked = updates.filter((update) => update.acked);
    const keys = await own.query<{ key: string }>(
      `select key from idempotency_key where status = 200 and key = any($1)`,
      [acked.map((update) => update.key)],
    );
    const storedKeys = new Set(keys.rows.map((row) => row.key));
    const requestIds = acked.flatMap((update) => update.ackRequestIds);
    const audit = await own.query<{ request_id: string }>(
      `select distinct request_id from audit_event where status = 200 and request_id = any($1)`,
      [requestIds],
    );
    const audited = new Set(audit.rows.map((row) => row.request_id));
    // Each hold holds what its history last wrote to it.
    const accounts = [...new Set(updates.map((update) => update.accountNumber))];
    const holds = await core.query<{ account_number: string; held: string | null; last: string | null }>(
      `select hold.account_number, hold.reference1 as held,
              (select new_character from account_fm_history history
                where history.account_number = hold.account_number and history.record_name = 'ShareHold'
                  and history.field_name = 'Reference1' and history.share_id = '0000' and history.record_locator = 1
                order by sequence_number desc limit 1) as last
         from share_hold hold where hold.share_id = '0000' and hold.locator = 1 and hold.account_number = any($1)`,
      [accounts],
    );
    return {
      fleet,
      sent: updates.length,
      acked: acked.length,
      unacked: updates.length - acked.length,
      lost: acked.filter((update) => (rows.get(update.value) ?? 0) === 0).map((update) => update.value),
      duplicated: acked.filter((update) => (rows.get(update.value) ?? 0) > 1).map((update) => update.value),
      unackedDuplicated: updates
        .filter((update) => !update.acked && (rows.get(update.value) ?? 0) > 1)
        .map((update) => update.value),
      keysMissing: acked
        .filter((update) => !update.confirmedByRead && !storedKeys.has(update.key))
        .map((update) => update.key),
      auditMissing: requestIds.filter((id) => !audited.has(id)),
      finalMismatch: holds.rows
        .filter((row) => row.held !== row.last)
        .map((row) => `${row.account_number} holds ${row.held}, its history last wrote ${row.last}`),
      replayed: acked.filter((update) => update.replayed).length,
    };
  } finally {
    await Promise.all([core.end(), own.end()]);
  }
}
