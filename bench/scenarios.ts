/**
 * What the benchmark sends: for every measured operation a pool of different valid requests, built
 * from the deterministic generator for accounts drawn at random across the dataset, and the scenarios
 * that combine them.
 */
import { Random } from '../src/seed/random.js';
import { DATASET_AS_OF, generateAccount, type AccountBundle } from '../src/seed/generate.js';
import { OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { createSymxCodec } from '../src/symxchange/codec.js';
import type { Headers } from './load.js';

/** One request of an operation, and whether coregate's answer to it is right. */
export interface PreparedRequest {
  readonly body: string;
  /** Checks coregate's answer (Prism answers with examples, the ceiling with padding). */
  readonly isRight: (answer: unknown) => boolean;
  /** Headers of this request alone, over the operation's and the target's (an Idempotency-Key). */
  readonly headers?: Headers;
}

export interface Operation {
  readonly name: string;
  readonly path: string;
  /** The top-level property of every answer, checked on Prism too. */
  readonly answerKey: string;
  /** Why the operation cannot be measured, if it cannot. */
  readonly unavailable?: string;
  /** Headers of its own, over the target's (a SOAP call's media type and SOAPAction). */
  readonly headers?: Headers;
  /** The JSON of an answer (default: the answer parsed as JSON); a SOAP answer is decoded. */
  readonly parse?: (text: string) => unknown;
  /** The next request, cycling through the pool. */
  next(): PreparedRequest;
}

export interface Scenario {
  readonly name: string;
  /** Operation names and their weights in the blend (one operation with weight 1 for most). */
  readonly parts: readonly { readonly operation: string; readonly weight: number }[];
  /** Connections of this scenario's runs, when not the run's setting. */
  readonly connections?: number;
  /** The only targets it is measured on, when not every target. */
  readonly targets?: readonly string[];
}

const P1 = '/gw/627/persistent';
const P2 = '/gw/627/2022.01';

/** Different requests per operation; lookups and updates spread over this many accounts. */
const POOL_SIZE = 1000;
/** Accounts generated at most to fill the pools (collateral exists on about one account in six). */
const MAX_SAMPLED_ACCOUNTS = 12_000;
/** The walk follows this many lists page by page. */
const WALK_LISTS = 200;
/** Records per page of the walk; collateral history lists hold 1 to 5 records. */
const WALK_PAGE_SIZE = 2;

export const WALK_OPERATION = 'getCollateralFmHistoryPagedList';
export const WALK_PATH = `${P2}/collateral/${WALK_OPERATION}`;
const SEARCH_QUERY = "Amount > 100 AND EffectiveDate >= {date:'2020-01-01'}";

/** The value at a property path of a parsed answer, or undefined. */
export function valueAt(value: unknown, ...path: readonly string[]): unknown {
  let current = value;
  for (const key of path) {
    current = current !== null && typeof current === 'object' ? (current as Record<string, unknown>)[key] : undefined;
  }
  return current;
}

const includes = (list: unknown, item: string) => Array.isArray(list) && list.includes(item);

/** A request body: the administrative credentials, then the operation's fields. */
export function requestBody(password: string, fields: Readonly<Record<string, unknown>>): string {
  return JSON.stringify({ Credentials: { AdministrativeCredentials: { Password: password } }, ...fields });
}

/** An operation that cycles through prepared requests. */
export function cyclingOperation(
  name: string,
  path: string,
  answerKey: string,
  requests: readonly PreparedRequest[],
): Operation {
  let position = 0;
  const unavailable = requests.length === 0 ? `no ${name} request could be built from the dataset` : undefined;
  return {
    name,
    path,
    answerKey,
    ...(unavailable ? { unavailable } : {}),
    next: () => requests[position++ % requests.length]!,
  };
}

/** What a lookup pool takes from one account: request fields and the check of the answer, or nothing. */
type PickRequest = (
  bundle: AccountBundle,
) => { fields: Record<string, unknown>; isRight: (answer: unknown) => boolean } | undefined;

interface PoolSpec {
  readonly name: string;
  readonly path: string;
  readonly answerKey: string;
  readonly pick: PickRequest;
}

const first = <T>(items: readonly T[], accepts: (item: T) => boolean = () => true): T | undefined =>
  items.find(accepts);

const text = (values: Readonly<Record<string, unknown>>, field: string) => String(values[field]);

/** The read operations whose requests come straight from one generated account each. */
const POOLS: readonly PoolSpec[] = [
  {
    name: 'findByActiveCard',
    path: `${P1}/findby/findByActiveCard`,
    answerKey: 'AccountNumber',
    pick: ({ accountNumber, records }) => {
      const card = first(
        records.Card,
        ({ values }) => values.Status === 0 && text(values, 'ExpirationDate') >= DATASET_AS_OF,
      );
      return (
        card && {
          fields: { CardNumber: card.values.CardNumber },
          isRight: (answer) => valueAt(answer, 'AccountNumber') === accountNumber,
        }
      );
    },
  },
  {
    name: 'findByAnyCard',
    path: `${P1}/findby/findByAnyCard`,
    answerKey: 'AccountNumber',
    pick: ({ accountNumber, records }) => {
      const card = first(records.Card);
      return (
        card && {
          fields: { CardNumber: card.values.CardNumber },
          isRight: (answer) => includes(valueAt(answer, 'AccountNumber'), accountNumber),
        }
      );
    },
  },
  {
    name: 'findByHomeUser',
    path: `${P1}/findby/findByHomeUser`,
    answerKey: 'AccountNumber',
    pick: ({ accountNumber, records }) => {
      const user = first(records.HomeBankingUser);
      return (
        user && {
          fields: { HomeBankingUserName: user.values.UserName },
          isRight: (answer) => valueAt(answer, 'AccountNumber') === accountNumber,
        }
      );
    },
  },
  {
    name: 'findByMICR',
    path: `${P1}/findby/findByMICR`,
    answerKey: 'Result',
    pick: ({ accountNumber, records }) => {
      const micr = first(records.Micr);
      return (
        micr && {
          fields: { MICR: micr.values.MicrNumber, Draft: micr.values.Draft },
          isRight: (answer) => valueAt(answer, 'Result', 'AccountNumber') === accountNumber,
        }
      );
    },
  },
  {
    name: 'findByLookup',
    path: `${P1}/findby/findByLookup`,
    answerKey: 'Result',
    pick: ({ accountNumber, records }) => {
      const lookup = first(records.Lookup);
      return (
        lookup && {
          fields: { LookupType: lookup.values.LookupType, LookupNumber: lookup.values.LookupNumber },
          isRight: (answer) => valueAt(answer, 'AccountNumber') === accountNumber,
        }
      );
    },
  },
  {
    name: 'findBySSN',
    path: `${P1}/findby/findBySSN`,
    answerKey: 'AccountNumber',
    pick: ({ accountNumber, records }) => {
      const name = first(records.ShareName, ({ keys }) => keys.share_id === null);
      return (
        name && {
          fields: { SSN: name.values.Ssn },
          isRight: (answer) => includes(valueAt(answer, 'AccountNumber'), accountNumber),
        }
      );
    },
  },
  {
    name: 'findByShortName',
    path: `${P1}/findby/findByShortName`,
    answerKey: 'AccountNumber',
    pick: ({ records }) => {
      const name = first(records.ShareName);
      // A common short name lists more accounts than the list maximum, which may leave this one out.
      return (
        name && {
          fields: { ShortName: name.values.ShortName },
          isRight: (answer) => {
            const accounts = valueAt(answer, 'AccountNumber');
            return Array.isArray(accounts) && accounts.length > 0;
          },
        }
      );
    },
  },
  {
    name: 'getCorpTransferSelectFields',
    path: `${P1}/corptransfer/getCorpTransferSelectFields`,
    answerKey: 'CorpTransfer',
    pick: ({ records }) => {
      const transfer = first(records.CorpTransfer);
      return (
        transfer && {
          fields: {
            CorpTransferGlobalSequenceDate: transfer.values.GlobalSequenceDate,
            CorpTransferGlobalSequence: transfer.values.GlobalSequence,
            SelectableFields: { IncludeAllCorpTransferFields: true },
          },
          isRight: (answer) => valueAt(answer, 'CorpTransfer', 'GlobalSequence') === transfer.values.GlobalSequence,
        }
      );
    },
  },
  {
    name: 'getCollateralSelectFields',
    path: `${P2}/collateral/getCollateralSelectFields`,
    answerKey: 'Collateral',
    pick: ({ records }) => {
      const collateral = first(records.Collateral);
      return (
        collateral && {
          fields: {
            CollateralNumber: collateral.values.Number,
            SelectableFields: { IncludeAllCollateralFields: true },
          },
          isRight: (answer) => valueAt(answer, 'Collateral', 'Number') === collateral.values.Number,
        }
      );
    },
  },
  {
    name: 'searchCollateralCollHoldSelectFields',
    path: `${P2}/collateral/searchCollateralCollHoldSelectFields`,
    answerKey: 'CollateralCollHoldList',
    pick: ({ records }) => {
      const collateral = first(records.Collateral);
      return (
        collateral && {
          fields: {
            CollateralNumber: collateral.values.Number,
            SelectableFields: { IncludeAllCollateralCollHoldFields: true },
            SearchFilter: { Query: SEARCH_QUERY },
          },
          isRight: (answer) => Array.isArray(valueAt(answer, 'CollateralCollHoldList', 'CollateralCollHold')),
        }
      );
    },
  },
];

/** Indices of accounts drawn uniformly from 2..accounts, the same for the same seed and size. */
function* sampledIndices(seed: number, accounts: number): Generator<number> {
  const rng = Random.derive(seed, accounts, 0xbe7c);
  // Account 1 is left out: its collateral's 5,000-row history is the scale check's long list, not a typical read.
  for (let drawn = 0; drawn < MAX_SAMPLED_ACCOUNTS; drawn += 1) yield rng.int(Math.min(2, accounts), accounts);
}

interface Sampled {
  /** Request fields and checks per operation of POOLS. */
  readonly picks: Map<string, NonNullable<ReturnType<PickRequest>>[]>;
  /** Accounts whose primary savings share 0000 the updates change. */
  readonly accountNumbers: string[];
  /** Collateral numbers whose history lists the walk follows. */
  readonly collaterals: string[];
}

/** Generates random accounts until every pool is full (or enough accounts were tried). */
function sample(seed: number, accounts: number): Sampled {
  const sampled: Sampled = { picks: new Map(POOLS.map(({ name }) => [name, []])), accountNumbers: [], collaterals: [] };
  const isFull = () =>
    sampled.accountNumbers.length >= POOL_SIZE &&
    sampled.collaterals.length >= WALK_LISTS &&
    [...sampled.picks.values()].every((picks) => picks.length >= POOL_SIZE);
  for (const index of sampledIndices(seed, accounts)) {
    if (isFull()) break;
    const bundle = generateAccount(seed, index);
    for (const { name, pick } of POOLS) {
      const picks = sampled.picks.get(name)!;
      const picked = picks.length < POOL_SIZE ? pick(bundle) : undefined;
      if (picked) picks.push(picked);
    }
    if (sampled.accountNumbers.length < POOL_SIZE) sampled.accountNumbers.push(bundle.accountNumber);
    const collateral = first(bundle.records.Collateral);
    if (collateral && sampled.collaterals.length < WALK_LISTS) {
      sampled.collaterals.push(text(collateral.values, 'Number'));
    }
  }
  return sampled;
}

/** Tells this run's nicknames from an earlier run's on a reused dataset. */
const RUN_ID = Date.now().toString(36);

/**
 * updateShareByID on one family: each request changes the Nickname of share 0000 of the next account
 * to a value no earlier request or run wrote, so every request writes (and appends a history row).
 */
function shareUpdate(family: 'persistent' | '2022.01', password: string, accountNumbers: readonly string[]): Operation {
  const fieldsName = family === 'persistent' ? 'ShareFields' : 'ShareUpdatableFields';
  let sent = 0;
  const isRight = (answer: unknown) => valueAt(answer, 'UpdateStatus', 'isAllFieldsUpdateSuccess') === true;
  return {
    name: `updateShareByID/${family}`,
    path: `/gw/627/${family}/account/updateShareByID`,
    answerKey: 'UpdateStatus',
    next: () => {
      sent += 1;
      const body = requestBody(password, {
        AccountNumber: accountNumbers[sent % accountNumbers.length],
        ShareId: '0000',
        [fieldsName]: { Nickname: `BENCH ${RUN_ID} ${family} ${sent}` },
      });
      return { body, isRight };
    },
  };
}

/** Idempotency-Keys handed out in this run, across targets: a key is never sent with two bodies. */
let keysSent = 0;

/**
 * An update sent with an Idempotency-Key, a new one on every request (as a client sends one per update it
 * means to apply once): what the gateway and the forwarder are sent, the gateway to keep its keyed path.
 */
export function keyedUpdate(update: Operation): Operation {
  return {
    ...update,
    next: () => ({ ...update.next(), headers: { 'idempotency-key': `bench-${RUN_ID}-${(keysSent += 1)}` } }),
  };
}

/** The first page request of each list the walk follows. */
export interface WalkStart {
  readonly collateralNumber: string;
  readonly body: string;
}

/** The operations of a dataset, by name (the walk is added once its pages are known). */
export interface DatasetOperations {
  readonly operations: Map<string, Operation>;
  readonly walkStarts: readonly WalkStart[];
}

/**
 * Request pools for the dataset `seed` of `accounts` accounts, authenticated with `password`.
 * @example buildOperations(627, 100000, 'secret').operations.get('findBySSN')?.next().body
 */
export function buildOperations(seed: number, accounts: number, password: string): DatasetOperations {
  const sampled = sample(seed, accounts);
  const operations = new Map<string, Operation>();
  for (const { name, path, answerKey } of POOLS) {
    const requests = sampled.picks
      .get(name)!
      .map(({ fields, isRight }) => ({ body: requestBody(password, fields), isRight }));
    operations.set(name, cyclingOperation(name, path, answerKey, requests));
  }
  for (const family of ['persistent', '2022.01'] as const) {
    const operation = shareUpdate(family, password, sampled.accountNumbers);
    operations.set(operation.name, operation);
  }
  for (const name of SOAP_TWINS) {
    const twin = soapTwin(operations.get(name)!);
    operations.set(twin.name, twin);
  }
  const walkStarts = sampled.collaterals.map((collateralNumber) => ({
    collateralNumber,
    body: requestBody(password, {
      CollateralNumber: collateralNumber,
      PagingRequestContext: { NumberOfRecordsToReturn: WALK_PAGE_SIZE },
    }),
  }));
  return { operations, walkStarts };
}

/** The request of the page after a page that answered `token`. */
export function nextPageBody(start: string, token: string): string {
  const body = JSON.parse(start) as { PagingRequestContext: Record<string, unknown> };
  return JSON.stringify({ ...body, PagingRequestContext: { ...body.PagingRequestContext, Token: token } });
}

/** The SymXchange face's operations measured beside their JSON twins (issue: the SOAP face's speed). */
export const SOAP_TWINS = ['findBySSN', 'updateShareByID/persistent', 'getCollateralSelectFields'] as const;
export const SOAP_PREFIX = 'soap:';

const codec = createSymxCodec({ operations: OPERATIONS, schemas: SHARED_SCHEMAS });

/**
 * The SOAP twin of a JSON operation: the same requests as SymXchange envelopes, sent to the face's
 * endpoint with the operation's SOAPAction, their answers decoded back to JSON for the same checks.
 * Envelopes are encoded while the pool is built, not during the run (a share update's nickname is put
 * into a prepared envelope), so the load generator spends no more per request than for JSON.
 */
export function soapTwin(json: Operation): Operation {
  const [, family = 'persistent', service = '', name = ''] =
    /^\/gw\/627\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(json.path) ?? [];
  const operation = OPERATIONS.find(
    (op) => op.name === name && op.service === service && op.family === (family === 'persistent' ? 'P1' : 'P2'),
  );
  if (!operation) throw new Error(`no operation at ${json.path}`);
  const wire = codec.mapping.wireOperation(operation);
  const path = `/SymXchange/${operation.family === 'P1' ? '' : '2022.01/'}${operation.service}`;
  const envelope = (body: string) =>
    codec.encodeRequest(operation, JSON.parse(body) as Record<string, unknown>, { messageId: 'bench' });
  // Each distinct body is encoded once, with the values a share update changes per request (its account
  // and nickname) as markers that are then replaced: the marked JSON body is the template's key.
  const varying = ['AccountNumber', 'Nickname'].map((field) => new RegExp(`"${field}":"([^"]*)"`));
  const templates = new Map<string, string>();
  const soapBody = (body: string) => {
    const values: string[] = [];
    const key = varying.reduce(
      (text, pattern, i) =>
        text.replace(pattern, (whole: string, value: string) => {
          values[i] = value;
          return whole.replace(`"${value}"`, `"VARYING-${i}"`);
        }),
      body,
    );
    let template = templates.get(key);
    if (!template) templates.set(key, (template = envelope(key)));
    return values.reduce(
      (text, value, i) => (value === undefined ? text : text.replace(`VARYING-${i}`, value)),
      template,
    );
  };
  return {
    name: `${SOAP_PREFIX}${json.name}`,
    path,
    answerKey: json.answerKey,
    ...(json.unavailable ? { unavailable: json.unavailable } : {}),
    headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${wire.soapAction}"` },
    parse: (text) => {
      try {
        return codec.decodeResponse(operation, text).result;
      } catch {
        return undefined;
      }
    },
    next: () => {
      const request = json.next();
      return { body: soapBody(request.body), isRight: request.isRight };
    },
  };
}

/** The name of a scenario's run on one connection. */
export const unloaded = (name: string) => `${name} (1 connection)`;

/** Mix weights: lookups dominate, as in home banking and card traffic, then collateral reads and writes. */
const MIX: Readonly<Record<string, number>> = {
  findByActiveCard: 20,
  findByAnyCard: 5,
  findByHomeUser: 10,
  findByMICR: 5,
  findByLookup: 5,
  findBySSN: 5,
  findByShortName: 2,
  getCorpTransferSelectFields: 5,
  'updateShareByID/persistent': 5,
  'updateShareByID/2022.01': 5,
  getCollateralSelectFields: 10,
  [WALK_OPERATION]: 15,
  searchCollateralCollHoldSelectFields: 8,
};

/** Every scenario, in the order measured: each operation alone, the SOAP twins, then the mix. */
export const SCENARIOS: readonly Scenario[] = [
  // A SOAP twin runs right after its JSON scenario, so that both meet the data in the same state (the
  // update's twin still meets the rows the JSON update has just written; nothing runs between them).
  ...Object.keys(MIX).flatMap((operation) => [
    { name: operation, parts: [{ operation, weight: 1 }] },
    ...((SOAP_TWINS as readonly string[]).includes(operation)
      ? [{ name: `${SOAP_PREFIX}${operation}`, parts: [{ operation: `${SOAP_PREFIX}${operation}`, weight: 1 }] }]
      : []),
  ]),
  { name: 'mix', parts: Object.entries(MIX).map(([operation, weight]) => ({ operation, weight })) },
  // What the gateway (and the forwarder) add to a call when nothing queues: each and the core, one request at a time.
  ...SOAP_TWINS.flatMap((name) => [
    {
      name: unloaded(name),
      parts: [{ operation: name, weight: 1 }],
      connections: 1,
      targets: ['gateway', 'forwarder'],
    },
    {
      name: unloaded(`${SOAP_PREFIX}${name}`),
      parts: [{ operation: `${SOAP_PREFIX}${name}`, weight: 1 }],
      connections: 1,
      targets: ['core'],
    },
  ]),
];

/** The operations the hand-written anchors serve. */
export const HANDWRITTEN = ['findBySSN', 'getCollateralSelectFields'] as const;

/**
 * Whether a scenario is measured on a target: the targets it names, if it names any; the hand-written
 * anchors only on the operations they serve; the gateway, the forwarder and their core only on the SOAP
 * twins' operations (the gateway and the forwarder the JSON requests, the core the envelopes); Prism and the
 * ceiling on the JSON scenarios.
 */
export function measuredOn(scenario: Scenario, target: string): boolean {
  if (scenario.targets) return scenario.targets.includes(target);
  if (target.startsWith('handwritten')) return (HANDWRITTEN as readonly string[]).includes(scenario.name);
  if (target === 'gateway' || target === 'forwarder') return (SOAP_TWINS as readonly string[]).includes(scenario.name);
  if (target === 'core') return SOAP_TWINS.some((name) => scenario.name === `${SOAP_PREFIX}${name}`);
  // Prism mocks the JSON API's OpenAPI document, and the ceiling answers JSON: neither has a SOAP face.
  if (target === 'prism' || target === 'ceiling') return !scenario.name.startsWith(SOAP_PREFIX);
  return true;
}

/** The order of operations in a run of a scenario: each as often as its weight, shuffled deterministically. */
export function schedule(scenario: Scenario): string[] {
  const order = scenario.parts.flatMap(({ operation, weight }) => Array<string>(weight).fill(operation));
  const rng = new Random(order.length);
  for (let i = order.length - 1; i > 0; i -= 1) {
    const j = rng.int(0, i);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}
