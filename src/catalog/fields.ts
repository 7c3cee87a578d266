/**
 * The vocabulary of the record catalog: field kinds, their constraints and the builders used by
 * `records.ts`. Everything else (SQL tables, TypeBox schemas, selectors, query typing, FM-history data
 * types, OpenAPI) is derived from these definitions.
 */

/** The two path families of the spec: `/gw/627/persistent` (P1) and `/gw/627/2022.01` (P2). */
export type Family = 'P1' | 'P2';
export const FAMILIES: readonly Family[] = ['P1', 'P2'];

/**
 * Scalar kinds. `money` and `rate` are both JSON numbers; they differ in scale and in the
 * file-maintenance history column they are written to (OldMoney/NewMoney vs OldRate/NewRate).
 */
export type FieldKind = 'string' | 'integer' | 'money' | 'rate' | 'date';

/** Sensitive values are never stored in clear: a keyed HMAC for lookup plus AES-256-GCM ciphertext. */
export type Protection = 'pan' | 'ssn' | 'micr';

export interface FieldDef {
  /** The field name as it appears on the wire, e.g. `UserChar1`. */
  readonly name: string;
  readonly kind: FieldKind;
  /** SQL column (snake_case of the name unless overridden). */
  readonly column: string;
  /** Strings: maximum length in characters. */
  readonly maxLength?: number;
  /** Strings: a regular expression every value must match (anchored). */
  readonly pattern?: string;
  /** Integers, money and rates: inclusive range. */
  readonly minimum?: number;
  readonly maximum?: number;
  /** Repeating entries: stored as `[{EntryId, <name>}]`, EntryId in 1..maxEntries. */
  readonly repeating?: { readonly maxEntries: number };
  /** A key or system-maintained field: readable, never updatable. */
  readonly readOnly?: boolean;
  /** Update families whose updatable-fields object carries this field (default: both). */
  readonly families: readonly Family[];
  readonly protection?: Protection;
}

export interface FieldOptions {
  column?: string;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  readOnly?: boolean;
  families?: readonly Family[];
  protection?: Protection;
}

/** Integer range of a PostgreSQL `integer`. */
export const INT4_MIN = -2147483648;
export const INT4_MAX = 2147483647;
/** numeric(15,2) */
export const MONEY_LIMIT = 9999999999999.99;
export const MONEY_SCALE = 2;
/** numeric(10,3) */
export const RATE_LIMIT = 9999999.999;
export const RATE_SCALE = 3;
/** Default maximum length of a string field whose length the spec does not give. */
export const DEFAULT_STRING_LENGTH = 40;
/** Default number of entries of a repeating field. */
export const DEFAULT_MAX_ENTRIES = 20;

/**
 * snake_case of a wire name: `UserChar1` → `user_char1`, `GIin` → `g_iin`, `SlIdType` → `sl_id_type`.
 * @example toColumnName('ExcpNoticeCountCpWork') // 'excp_notice_count_cp_work'
 */
export function toColumnName(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

function field(name: string, kind: FieldKind, options: FieldOptions, defaults: Partial<FieldDef>): FieldDef {
  const { families, column, ...rest } = options;
  return {
    name,
    kind,
    column: column ?? toColumnName(name),
    families: families ?? ['P1', 'P2'],
    ...defaults,
    ...rest,
  };
}

/** @example str('Description', 40) */
export function str(name: string, maxLength = DEFAULT_STRING_LENGTH, options: FieldOptions = {}): FieldDef {
  return field(name, 'string', options, { maxLength });
}

/** @example int('Type', { minimum: 0, maximum: 9999 }) */
export function int(name: string, options: FieldOptions = {}): FieldDef {
  return field(name, 'integer', options, { minimum: INT4_MIN, maximum: INT4_MAX });
}

/** A small integer code (Type, Status, …): 0..9999 unless told otherwise. */
export function code(name: string, options: FieldOptions = {}): FieldDef {
  return field(name, 'integer', options, { minimum: 0, maximum: 9999 });
}

/** @example money('Amount') */
export function money(name: string, options: FieldOptions = {}): FieldDef {
  return field(name, 'money', options, { minimum: -MONEY_LIMIT, maximum: MONEY_LIMIT });
}

/** @example rate('DivRate') */
export function rate(name: string, options: FieldOptions = {}): FieldDef {
  return field(name, 'rate', options, { minimum: -RATE_LIMIT, maximum: RATE_LIMIT });
}

/** @example date('BirthDate') */
export function date(name: string, options: FieldOptions = {}): FieldDef {
  return field(name, 'date', options, {});
}

/** A repeating field: `[{EntryId, <name>}]`. @example repeating(str('Memo', 40)) */
export function repeating(entry: FieldDef, maxEntries = DEFAULT_MAX_ENTRIES): FieldDef {
  return { ...entry, repeating: { maxEntries } };
}

/**
 * A numbered family such as `UserChar1..UserChar20`.
 * @example numbered(1, 20, (n) => str(`UserChar${n}`))
 */
export function numbered(from: number, to: number, make: (n: number) => FieldDef): FieldDef[] {
  const fields: FieldDef[] = [];
  for (let n = from; n <= to; n += 1) fields.push(make(n));
  return fields;
}

/** Restrict fields to the given update families (e.g. P1-only fields of ShareNameFields). */
export function onlyIn(families: readonly Family[], fields: readonly FieldDef[]): FieldDef[] {
  return fields.map((f) => ({ ...f, families }));
}
