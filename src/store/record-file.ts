/**
 * The records file of `coregate export` and `coregate import`: NDJSON, a header line, then one line per
 * record, `{"record":"<Name>", <column>: <value>, …}`, under the table's column names (a null column is
 * left out), then an end line counting the records. Protected values stay as stored: a field's HMAC and
 * AES-GCM ciphertext columns as hex, member passwords as their scrypt hashes. This module turns rows into
 * lines and checks lines against the catalog; record-transfer.ts reads and writes the database.
 */
import {
  CONTROL_CHARACTER,
  INT4_MAX,
  INT4_MIN,
  RECORDS,
  fieldRuleViolation,
  isCalendarDate,
  str,
  type FieldDef,
  type RecordDef,
} from '../catalog/index.js';
import type { Secrets } from '../crypto/secrets.js';
import type { DemoDataset } from './access.js';
import type { Row } from './records.js';
import { protectedColumns, protectedText, tableColumns, type TableColumn } from '../database/schema.js';

/**
 * The version of the line format an export writes. Format 2 ends with an end line holding the counts; format
 * 1, which an import still reads, carried them in its header (an export read in pages knows them only at
 * the end). A reader refuses a file of any other.
 */
export const RECORD_FILE_FORMAT = 2;
const READABLE_FORMATS: readonly number[] = [1, RECORD_FILE_FORMAT];

/** The first line of a records file. */
export interface RecordFileHeader {
  readonly coregate: 'records';
  readonly format: 1 | typeof RECORD_FILE_FORMAT;
  readonly exportedAt?: string;
  /** The demo dataset the exported store was seeded with, if it was: an import makes the store resettable to it. */
  readonly demoDataset?: DemoDataset | null;
  /** Format 1: records per record type; when given, an import checks the file holds exactly these. */
  readonly counts?: Readonly<Record<string, number>>;
}

/**
 * The last line of a records file (format 2): the records it holds per record type, written once every
 * record is. An import checks the file holds exactly these, and refuses a file without it (cut off).
 */
export interface RecordFileEnd {
  readonly coregate: 'end';
  readonly counts: Readonly<Record<string, number>>;
}

const SCRYPT_HASH = '^scrypt\\$[0-9]+\\$[0-9]+\\$[0-9]+\\$[A-Za-z0-9+/]+={0,2}\\$[A-Za-z0-9+/]+={0,2}$';

/**
 * Member secrets (home banking password, audio access code, as scrypt hashes) travel with the records they
 * open: described like a catalog record so that the same checks and the same writer serve them.
 */
export const MEMBER_SECRET_RECORD: RecordDef = {
  name: 'MemberSecret',
  table: 'member_secret',
  keyColumns: [],
  primaryKey: ['account_number'],
  fields: [
    str('AccountNumber', 10, { pattern: '^[0-9]{10}$' }),
    str('HomeBankingPasswordHash', 255, { pattern: SCRYPT_HASH }),
    str('AudioAccessCodeHash', 255, { pattern: SCRYPT_HASH }),
  ],
  children: [],
  indexes: [],
};

/** What a records file holds, in the order an export writes it: the catalog's records, then member secrets. */
export const DATA_RECORDS: readonly RecordDef[] = [...RECORDS, MEMBER_SECRET_RECORD];

/** A line that cannot be imported: its number and what is wrong, naming the record and column at fault. */
export class RecordFileError extends Error {
  constructor(
    readonly line: number,
    detail: string,
  ) {
    super(`line ${line}: ${detail}`);
    this.name = 'RecordFileError';
  }
}

/** How one column's value is checked. */
type ColumnRule =
  | { readonly from: 'value'; readonly field: FieldDef }
  | { readonly from: 'key'; readonly sqlType: string }
  | { readonly from: 'hmac' | 'cipher'; readonly field: FieldDef };

interface LineType {
  readonly record: RecordDef;
  readonly columns: ReadonlyMap<string, { readonly column: TableColumn; readonly rule: ColumnRule }>;
  /** Protected fields with their HMAC and ciphertext columns. */
  readonly protectedFields: readonly { field: FieldDef; hmac: string; cipher: string }[];
}

/** A field's value wins over a parent key of the same column (as in `tableColumns`). */
function ruleOf(column: TableColumn): ColumnRule {
  const source = column.sources.find((s) => s.from !== 'key') ?? column.sources[0]!;
  return source.from === 'key' ? { from: 'key', sqlType: column.sqlType } : source;
}

function lineType(record: RecordDef): LineType {
  const columns = new Map(tableColumns(record).map((column) => [column.name, { column, rule: ruleOf(column) }]));
  // The line's own `record` property must never shadow a column.
  if (columns.has('record')) throw new Error(`${record.name} has a column named "record"`);
  const protectedFields = record.fields
    .filter((field) => field.protection)
    .map((field) => ({ field, ...protectedColumns(field) }));
  return { record, columns, protectedFields };
}

const LINE_TYPES = new Map(DATA_RECORDS.map((record) => [record.name, lineType(record)]));

/** A `bytea` column as the database's `encode(…, 'hex')` and the file write it. */
const HEX = /^(?:[0-9a-f]{2})+$/;
const HMAC_HEX_LENGTH = 64;
/** IV (12 bytes) and tag (16) before the ciphertext. */
const SEALED_MIN_HEX_LENGTH = 56;

/**
 * A row read from the database as its line: the record's name, then its non-null columns in table order
 * (`bytea` columns already hex, as the export selects them).
 * @example recordLine(recordDef('Account'), { account_number: '0000000001', type: 0 }) // '{"record":"Account","account_number":"0000000001","type":0}'
 */
export function recordLine(record: RecordDef, row: Row): string {
  const line: Record<string, unknown> = { record: record.name };
  for (const [name, value] of Object.entries(row)) if (value !== null && value !== undefined) line[name] = value;
  return JSON.stringify(line);
}

const typeName = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value);

/** Why a scalar is not of a field's kind or breaks its rules, or undefined. */
function scalarProblem(field: FieldDef, value: unknown): string | undefined {
  const expected = { string: 'string', date: 'string', integer: 'number', money: 'number', rate: 'number' }[field.kind];
  if (typeof value !== expected || (typeof value === 'number' && !Number.isFinite(value))) {
    return `must be a ${field.kind === 'date' ? 'date string' : field.kind === 'string' ? 'string' : 'number'}, got ${typeName(value)}`;
  }
  if (field.kind === 'integer' && !Number.isInteger(value)) return 'must be an integer';
  if (typeof value === 'string' && !value.isWellFormed()) return 'must not contain an unpaired UTF-16 surrogate';
  return fieldRuleViolation(field, value)?.message.replace(`${field.name} `, '');
}

/** Why a repeating field's entries are not `[{EntryId, <name>}]` within its rules, or undefined. */
function entriesProblem(field: FieldDef, value: unknown): string | undefined {
  const max = field.repeating!.maxEntries;
  if (!Array.isArray(value)) return `must be an array of {EntryId, ${field.name}} entries, got ${typeName(value)}`;
  if (value.length > max) return `holds at most ${max} entries, got ${value.length}`;
  const seen = new Set<number>();
  for (const [position, entry] of value.entries()) {
    const at = `entry ${position + 1}`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return `${at} must be an object`;
    const extra = Object.keys(entry).find((key) => key !== 'EntryId' && key !== field.name);
    if (extra !== undefined) return `${at} has an unknown property "${extra}"`;
    const { EntryId: id, [field.name]: item } = entry as Record<string, unknown>;
    if (!Number.isInteger(id) || (id as number) < 1 || (id as number) > max || seen.has(id as number)) {
      return `${at}: EntryId must be a distinct integer from 1 to ${max}`;
    }
    seen.add(id as number);
    const problem = item === null || item === undefined ? undefined : scalarProblem(field, item);
    if (problem) return `${at}: ${problem}`;
  }
  return undefined;
}

/** Why a parent key column's value does not fit its SQL type, or undefined. */
function keyProblem(sqlType: string, value: unknown): string | undefined {
  const varchar = /^varchar\((\d+)\)$/.exec(sqlType);
  if (varchar) {
    if (typeof value !== 'string') return `must be a string, got ${typeName(value)}`;
    if ([...value].length > Number(varchar[1])) return `must be at most ${varchar[1]} characters`;
    if (!value.isWellFormed()) return 'must not contain an unpaired UTF-16 surrogate';
    return CONTROL_CHARACTER.test(value) ? 'must not contain control characters' : undefined;
  }
  if (sqlType === 'integer') {
    return Number.isInteger(value) && (value as number) >= INT4_MIN && (value as number) <= INT4_MAX
      ? undefined
      : `must be an integer, got ${typeName(value)}`;
  }
  return typeof value === 'string' && isCalendarDate(value) ? undefined : 'must be a calendar date YYYY-MM-DD';
}

function valueProblem(rule: ColumnRule, value: unknown): string | undefined {
  switch (rule.from) {
    case 'key':
      return keyProblem(rule.sqlType, value);
    case 'value':
      return rule.field.repeating ? entriesProblem(rule.field, value) : scalarProblem(rule.field, value);
    case 'hmac':
      return typeof value === 'string' && HEX.test(value) && value.length === HMAC_HEX_LENGTH
        ? undefined
        : `must be the ${HMAC_HEX_LENGTH / 2}-byte HMAC in lowercase hex`;
    case 'cipher':
      return typeof value === 'string' && HEX.test(value) && value.length >= SEALED_MIN_HEX_LENGTH
        ? undefined
        : 'must be the sealed value (IV, tag, ciphertext) in lowercase hex';
  }
}

/** `bytea` as PostgreSQL reads it from JSON text. */
const byteaText = (hex: string) => `\\x${hex}`;

/**
 * Whether an opened clear text is a value of its protected field: a scalar within the field's rules, or a
 * repeating field's entries within them, written as `protectedText` seals them.
 */
function isSealedValue(field: FieldDef, clear: string): boolean {
  if (!field.repeating) return fieldRuleViolation(field, clear) === undefined;
  let entries: unknown;
  try {
    entries = JSON.parse(clear);
  } catch {
    return false;
  }
  return entriesProblem(field, entries) === undefined && protectedText(field, entries) === clear;
}

/**
 * Checks a protected field's columns: both or neither, and the ciphertext opens under this store's secret
 * to a value of the field's rules whose HMAC is the one given. The clear value never leaves this function.
 */
function protectedProblem(
  type: LineType,
  entry: LineType['protectedFields'][number],
  line: Record<string, unknown>,
  secrets: Secrets,
): { column: string; detail: string } | undefined {
  const hmac = line[entry.hmac] as string | undefined;
  const cipher = line[entry.cipher] as string | undefined;
  if (hmac === undefined && cipher === undefined) return undefined;
  if (hmac === undefined || cipher === undefined) {
    const missing = hmac === undefined ? entry.hmac : entry.cipher;
    return { column: missing, detail: `is required with ${hmac === undefined ? entry.cipher : entry.hmac}` };
  }
  let clear: string;
  try {
    clear = secrets.decrypt(Buffer.from(cipher, 'hex'));
  } catch {
    return {
      column: entry.cipher,
      detail:
        "cannot be opened with this store's secret (the file was exported under another COREGATE_SECRET or secret.key)",
    };
  }
  if (!isSealedValue(entry.field, clear)) {
    return { column: entry.cipher, detail: `does not hold a valid ${type.record.name}.${entry.field.name}` };
  }
  if (!secrets.lookupHash(entry.field.protection!, clear).equals(Buffer.from(hmac, 'hex'))) {
    return { column: entry.hmac, detail: 'is not the HMAC of the value sealed beside it' };
  }
  return undefined;
}

/** A checked line: its record type and the table row to insert (`bytea` as `\x` text, as `toRow` writes it). */
export interface DecodedLine {
  readonly record: RecordDef;
  readonly row: Row;
}

/**
 * Reads one line after the header: the end line (`{"coregate":"end",…}`, checked), or a record line checked
 * against the catalog: a known record type, known columns, every value of its column's type and rules, the
 * key columns present, protected values sealed under `secrets`. Throws a `RecordFileError` naming the line
 * and the column at fault.
 * @example (decodeRecordLine('{"record":"Account","account_number":"0000000001"}', 2, secrets) as DecodedLine).row // { account_number: '0000000001' }
 */
export function decodeRecordLine(text: string, lineNumber: number, secrets: Secrets): DecodedLine | RecordFileEnd {
  const line = parseObject(text, lineNumber);
  if (line.record === undefined && line.coregate !== undefined) return endOf(line, lineNumber);
  const name = line.record;
  if (typeof name !== 'string') throw new RecordFileError(lineNumber, 'record: must name the record type');
  const type = LINE_TYPES.get(name);
  if (!type) {
    throw new RecordFileError(
      lineNumber,
      `record: unknown record type "${name}"; a records file holds ${DATA_RECORDS.map((r) => r.name).join(', ')}`,
    );
  }
  const fail = (column: string, detail: string): never => {
    throw new RecordFileError(lineNumber, `${name}.${column} ${detail}`);
  };
  const row: Row = {};
  for (const [column, value] of Object.entries(line)) {
    if (column === 'record' || value === null) continue;
    const entry = type.columns.get(column);
    if (!entry) fail(column, `is not a column of ${name}`);
    const problem = valueProblem(entry!.rule, value);
    if (problem) fail(column, problem);
    row[column] = entry!.rule.from === 'hmac' || entry!.rule.from === 'cipher' ? byteaText(value as string) : value;
  }
  for (const { column } of type.columns.values()) {
    if (column.notNull && row[column.name] === undefined) fail(column.name, 'is required');
  }
  for (const entry of type.protectedFields) {
    const problem = protectedProblem(type, entry, line, secrets);
    if (problem) fail(problem.column, problem.detail);
  }
  return { record: type.record, row };
}

function parseObject(text: string, lineNumber: number): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new RecordFileError(lineNumber, `not JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RecordFileError(lineNumber, `must be a JSON object, got ${typeName(value)}`);
  }
  return value as Record<string, unknown>;
}

const isCount = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;

/** Why a line's `counts` is not an object of record counts, or undefined. */
function countsProblem(counts: unknown): string | undefined {
  if (typeof counts !== 'object' || counts === null || Array.isArray(counts)) {
    return 'counts must be an object of record counts';
  }
  for (const [name, count] of Object.entries(counts)) {
    if (!LINE_TYPES.has(name)) return `counts names an unknown record type "${name}"`;
    if (!isCount(count)) return `counts.${name} must be a non-negative integer`;
  }
  return undefined;
}

/**
 * A line as the end line it is, or undefined: how a reader of a whole file (or answer) tells that it came
 * to its end.
 * @example recordFileEndOf('{"coregate":"end","counts":{"Account":3}}')?.counts.Account // 3
 */
export function recordFileEndOf(text: string | undefined): RecordFileEnd | undefined {
  try {
    const line = parseObject(text ?? '', 0);
    return line.record === undefined && line.coregate === 'end' ? endOf(line, 0) : undefined;
  } catch {
    return undefined;
  }
}

function endOf(line: Record<string, unknown>, lineNumber: number): RecordFileEnd {
  const fail = (detail: string): never => {
    throw new RecordFileError(lineNumber, `end line: ${detail}`);
  };
  if (line.coregate !== 'end') fail('must be {"coregate":"end","counts":{…}}, as coregate export writes it');
  const extra = Object.keys(line).find((key) => key !== 'coregate' && key !== 'counts');
  if (extra !== undefined) fail(`has an unknown property "${extra}"`);
  const problem = countsProblem(line.counts);
  if (problem) fail(problem);
  return line as unknown as RecordFileEnd;
}

/**
 * Reads and checks the header line (line 1).
 * @example parseRecordFileHeader('{"coregate":"records","format":2}').format // 2
 */
export function parseRecordFileHeader(text: string | undefined): RecordFileHeader {
  if (text === undefined) throw new RecordFileError(1, 'the file is empty; a records file starts with its header');
  const header = parseObject(text, 1);
  const fail = (detail: string): never => {
    throw new RecordFileError(1, `header: ${detail}`);
  };
  if (header.coregate !== 'records') {
    fail(`must be {"coregate":"records","format":${RECORD_FILE_FORMAT},…}, as coregate export writes it`);
  }
  if (!READABLE_FORMATS.includes(header.format as number)) {
    fail(`format ${String(header.format)} is not ${READABLE_FORMATS.join(' or ')}`);
  }
  const { demoDataset, counts } = header;
  if (demoDataset !== undefined && demoDataset !== null) {
    const { seed, accounts } = demoDataset as Record<string, unknown>;
    if (!isCount(seed) || !isCount(accounts) || (accounts as number) < 1) {
      fail('demoDataset must be {"seed": S, "accounts": N} with non-negative integers (N at least 1)');
    }
  }
  if (counts !== undefined) {
    if (header.format !== 1) fail(`counts are in the end line from format ${RECORD_FILE_FORMAT} on`);
    const problem = countsProblem(counts);
    if (problem) fail(problem);
  }
  return header as unknown as RecordFileHeader;
}
