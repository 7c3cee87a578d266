/**
 * `coregate recording import` (docs/recording.md, "Import"): the records a cassette shows, as a records file
 * (format 2) that `importRecords` loads like any export. A read's answer gives its records whole (a share,
 * its sub-records, a collateral and its children, a corporate transfer), keyed by what the request named;
 * a lookup's request and answer give the record it found by (an SSN or short name on an account-level name,
 * a card, a home-banking user, a MICR number, a lookup), unless a read already holds one. Every account,
 * share and collateral a record hangs from exists. Values are the cassette's pseudonyms; a value the
 * catalog's rules refuse is left out of its record and counted.
 */
import { fieldRuleViolation, recordDef, SHARE_RECORD_NAMES, type RecordDef } from '../catalog/index.js';
import { canonicalJson } from '../contract/canonical-json.js';
import type { Secrets } from '../crypto/secrets.js';
import { protectedColumns } from '../database/schema.js';
import { RECORD_FILE_FORMAT, recordLine } from '../store/record-file.js';
import { toRow, type Row, type WireRecord } from '../store/records.js';
import { SEEDED_RECORD_NAMES } from '../seed/dataset.js';
import type { CassetteLine } from './cassette.js';

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const isText = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** One record to write: its parent key columns and its wire values, merged over every answer that showed it. */
interface Gathered {
  readonly keys: Row;
  values: WireRecord;
}

/** What a cassette makes of a store: the records file's lines, and what it left out. */
export interface CassetteRecords {
  /** The SymXchange release the core spoke (the first exchange's). */
  readonly release: string | undefined;
  readonly lines: readonly string[];
  readonly counts: Readonly<Record<string, number>>;
  /** Values the catalog's rules refused, by record and field. */
  readonly refused: Readonly<Record<string, number>>;
}

/** The records a recording can hold, in the order they are written: the seed's, the same record types. */
const WRITTEN = SEEDED_RECORD_NAMES;

const SHARE_RECORDS: ReadonlySet<string> = new Set(SHARE_RECORD_NAMES);

/** The expiration date of a card a recorded findByActiveCard found: far enough not to expire in the sandbox. */
const ACTIVE_CARD_EXPIRES = '2099-12-31';

/**
 * The records file of a cassette's exchanges.
 * @example cassetteRecords(lines, secrets).lines[0] // '{"coregate":"records","format":2,…}'
 */
export function cassetteRecords(exchanges: Iterable<CassetteLine>, secrets: Secrets): CassetteRecords {
  const records = new Map<string, Map<string, Gathered>>(WRITTEN.map((name) => [name, new Map()]));
  const refused: Record<string, number> = {};
  let release: string | undefined;

  const gather = (name: string, identity: unknown[], keys: Row, values: WireRecord) => {
    const byIdentity = records.get(name)!;
    const key = canonicalJson(identity);
    const found = byIdentity.get(key);
    if (found) found.values = { ...found.values, ...values };
    else byIdentity.set(key, { keys, values });
  };
  const account = (number: unknown) => {
    if (isText(number)) gather('Account', [number], {}, { AccountNumber: number });
  };

  /** A record an answer holds, under the keys its request named; a collateral's child lists with it. */
  const answered = (name: string, values: JsonObject, request: JsonObject) => {
    const accountNumber = request.AccountNumber;
    if (name === 'Share' && isText(accountNumber)) {
      const id = values.Id ?? request.ShareId;
      account(accountNumber);
      gather(name, [accountNumber, id], { account_number: accountNumber }, { ...values, Id: id });
    } else if (SHARE_RECORDS.has(name) && isText(accountNumber) && typeof values.Locator === 'number') {
      account(accountNumber);
      const shareId = isText(request.ShareId) ? request.ShareId : null;
      if (shareId !== null)
        gather('Share', [accountNumber, shareId], { account_number: accountNumber }, { Id: shareId });
      gather(name, [accountNumber, values.Locator], { account_number: accountNumber, share_id: shareId }, values);
    } else if (name === 'CorpTransfer') {
      const date = values.GlobalSequenceDate ?? request.CorpTransferGlobalSequenceDate;
      const sequence = values.GlobalSequence ?? request.CorpTransferGlobalSequence;
      gather(name, [date, sequence], {}, { ...values, GlobalSequenceDate: date, GlobalSequence: sequence });
    } else if (name === 'Collateral') {
      const number = values.Number ?? request.CollateralNumber;
      if (!isText(number)) return;
      gather(name, [number], {}, { ...values, Number: number });
      children(recordDef(name), values, { ...request, CollateralNumber: number });
    } else if (name.startsWith('Collateral') && isText(request.CollateralNumber)) {
      const collateral = request.CollateralNumber;
      const position = values.Locator ?? values.SequenceNumber;
      if (typeof position !== 'number') return;
      gather('Collateral', [collateral], {}, { Number: collateral });
      if (name === 'CollateralDocumentTracking') {
        const document = request.CollateralDocumentLocator;
        if (typeof document !== 'number') return;
        const keys = { collateral_number: collateral, document_locator: document };
        gather(name, [collateral, document, position], keys, values);
      } else {
        gather(name, [collateral, position], { collateral_number: collateral }, values);
        if (name === 'CollateralDocument')
          children(recordDef(name), values, { ...request, CollateralDocumentLocator: position });
      }
    }
  };
  const children = (record: RecordDef, values: JsonObject, request: JsonObject) => {
    for (const child of record.children) {
      const list = values[child.list];
      if (Array.isArray(list)) for (const entry of list) if (isObject(entry)) answered(child.record, entry, request);
    }
  };

  /** The record a lookup found its accounts by, on each account unless a read showed one. */
  const lookedUp = (name: string, request: JsonObject, answer: JsonObject) => {
    const result = isObject(answer.Result) ? answer.Result : undefined;
    const found = [answer.AccountNumber, result?.AccountNumber].flat().filter(isText);
    const shareId = result?.IdType === 'SHARE' && isText(result.Id) ? result.Id : undefined;
    for (const accountNumber of new Set(found)) {
      account(accountNumber);
      const keys = { account_number: accountNumber };
      // One record per value looked up: a card findByActiveCard found stays active whatever else found it.
      const on = (record: string, values: WireRecord) => {
        const identity = [
          accountNumber,
          'lookup',
          values.CardNumber ?? values.UserName ?? values.MicrNumber,
          values.LookupNumber,
        ];
        const found = records.get(record)!.get(canonicalJson(identity));
        if (found?.values.Status === 0 && values.Status === 1) return;
        gather(record, identity, keys, values);
      };
      if (name === 'findBySSN' && isText(request.SSN)) nameOn(accountNumber, 'Ssn', request.SSN);
      if (name === 'findByShortName' && isText(request.ShortName))
        nameOn(accountNumber, 'ShortName', request.ShortName);
      if ((name === 'findByActiveCard' || name === 'findByAnyCard') && isText(request.CardNumber))
        on(
          'Card',
          name === 'findByActiveCard'
            ? // Active, and not expired: findByActiveCard finds it (lookups.ts).
              { CardNumber: request.CardNumber, Status: 0, ExpirationDate: ACTIVE_CARD_EXPIRES }
            : { CardNumber: request.CardNumber, Status: 1 },
        );
      if (name === 'findByHomeUser' && isText(request.HomeBankingUserName))
        on('HomeBankingUser', { UserName: request.HomeBankingUserName, Status: 0 });
      if (name === 'findByMICR' && isText(request.MICR))
        on('Micr', { MicrNumber: request.MICR, Draft: request.Draft, ...(shareId ? { ShareId: shareId } : {}) });
      if (name === 'findByLookup' && isText(request.LookupNumber))
        on('Lookup', {
          LookupType: request.LookupType,
          LookupNumber: request.LookupNumber,
          ...(shareId ? { ShareId: shareId } : {}),
        });
    }
  };
  /** An account-level name carrying a value a lookup found the account by, unless a name of it does already. */
  const nameOn = (accountNumber: string, field: 'Ssn' | 'ShortName', value: string) => {
    const names = [...records.get('ShareName')!.values()].filter((n) => n.keys.account_number === accountNumber);
    if (names.some((n) => n.values[field] === value)) return;
    pendingNames.push({ accountNumber, field, value });
  };
  const pendingNames: { accountNumber: string; field: 'Ssn' | 'ShortName'; value: string }[] = [];

  const lookups: [string, JsonObject, JsonObject][] = [];
  for (const exchange of exchanges) {
    release ??= exchange.release;
    if (exchange.outcome !== 'ok' || !isObject(exchange.answer) || !isObject(exchange.request)) continue;
    if (exchange.service === 'findby') {
      lookups.push([exchange.name, exchange.request, exchange.answer]);
      continue;
    }
    for (const [name, value] of Object.entries(exchange.answer)) {
      if (!WRITTEN.includes(name as (typeof WRITTEN)[number])) continue;
      for (const entry of [value].flat()) if (isObject(entry)) answered(name, entry, exchange.request);
    }
  }
  // Lookups last: a name a read showed carries the SSN already.
  for (const [name, request, answer] of lookups) lookedUp(name, request, answer);
  for (const { accountNumber, field, value } of pendingNames) {
    const names = [...records.get('ShareName')!.values()].filter((n) => n.keys.account_number === accountNumber);
    const spare = names.find((n) => n.keys.share_id === null && n.values[field] === undefined);
    if (spare) spare.values[field] = value;
    else
      gather(
        'ShareName',
        [accountNumber, 'lookup', field, value],
        { account_number: accountNumber, share_id: null },
        {
          [field]: value,
          Type: 0,
        },
      );
  }

  // Locators: a record a lookup made takes the next one free among its type's in its account.
  for (const name of ['ShareName', 'Card', 'HomeBankingUser', 'Micr', 'Lookup']) {
    const ofType = [...records.get(name)!.values()];
    for (const gathered of ofType) {
      if (typeof gathered.values.Locator === 'number') continue;
      const taken = new Set(
        ofType.filter((r) => r.keys.account_number === gathered.keys.account_number).map((r) => r.values.Locator),
      );
      let locator = 1;
      while (taken.has(locator)) locator += 1;
      gathered.values.Locator = locator;
    }
  }

  const lines = [
    canonicalJson({ coregate: 'records', format: RECORD_FILE_FORMAT, exportedAt: new Date().toISOString() }),
  ];
  const counts: Record<string, number> = {};
  for (const name of WRITTEN) {
    const record = recordDef(name);
    for (const { keys, values } of records.get(name)!.values()) {
      const kept: WireRecord = {};
      for (const field of record.fields) {
        const value = values[field.name];
        if (value === undefined || value === null) continue;
        const entries = field.repeating ? (Array.isArray(value) ? value : [value]) : [value];
        const broken = entries.some((entry) =>
          field.repeating
            ? !isObject(entry) || fieldRuleViolation(field, entry[field.name] ?? null) !== undefined
            : fieldRuleViolation(field, entry) !== undefined,
        );
        if (broken) refused[`${name}.${field.name}`] = (refused[`${name}.${field.name}`] ?? 0) + 1;
        else kept[field.name] = value;
      }
      const row = toRow(record, kept, keys, secrets);
      // A records file holds bytea as plain hex (as an export selects it).
      for (const field of record.fields.filter((f) => f.protection)) {
        const { hmac, cipher } = protectedColumns(field);
        for (const column of [hmac, cipher])
          if (typeof row[column] === 'string') row[column] = (row[column] as string).replace(/^\\x/, '');
      }
      lines.push(recordLine(record, row));
      counts[name] = (counts[name] ?? 0) + 1;
    }
  }
  lines.push(JSON.stringify({ coregate: 'end', counts }));
  return { release, lines, counts, refused };
}
