/**
 * Types a query against a record of the catalog and compiles it to a parameterized SQL condition.
 * The SQL text holds only column identifiers, whitelisted operators and keywords, parentheses and
 * `$n` placeholders with casts: every value the client wrote travels as a bound parameter.
 */
import { sql, type RawBuilder } from 'kysely';
import { isCalendarDate } from '../catalog/field-rules.js';
import { INT4_MAX, INT4_MIN, type FieldDef, type FieldKind } from '../catalog/fields.js';
import type { RecordDef } from '../catalog/records.js';
import { failAt, type ComparisonOperator, type Literal, type LiteralType } from './lexer.js';
import { parseQuery, type Comparison, type QueryNode } from './parser.js';

/** The operators SQL text may contain: the lexer's token is looked up, never copied into the text. */
const OPERATOR_SQL: Readonly<Record<ComparisonOperator, string>> = {
  '=': '=',
  '<>': '<>',
  '<': '<',
  '<=': '<=',
  '>': '>',
  '>=': '>=',
};

/**
 * The SQL type a parameter is cast to, so the database reads it exactly as written (numbers travel as
 * their text: no float rounding). Strings need none: they take the column's type.
 */
const PARAMETER_CAST: Readonly<Record<FieldKind, string | undefined>> = {
  string: undefined,
  integer: 'integer',
  money: 'numeric',
  rate: 'numeric',
  date: 'date',
};

/** The literal types each field kind compares with (NULL goes with every kind). */
const ACCEPTED: Readonly<Record<FieldKind, readonly LiteralType[]>> = {
  string: ['string'],
  integer: ['integer'],
  money: ['integer', 'decimal'],
  rate: ['integer', 'decimal'],
  date: ['date'],
};

/** How to write a value of each kind, for type errors. */
const EXPECTED: Readonly<Record<FieldKind, string>> = {
  string: "a quoted string such as 'text'",
  integer: 'a whole number such as 12',
  money: 'a number such as 12 or 12.50',
  rate: 'a number such as 5 or 4.125',
  date: "a date such as {date:'2024-01-31'}",
};

const LITERAL_NAMES: Readonly<Record<LiteralType, string>> = {
  integer: 'a whole number',
  decimal: 'a decimal number',
  string: 'a string',
  date: 'a date',
  null: 'NULL',
};

/** Edit distance, for "did you mean": field names are short, so the quadratic table is cheap. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The record's field closest to a misspelt name (a case slip first), if any is close. */
function closestField(record: RecordDef, name: string): FieldDef | undefined {
  const lower = name.toLowerCase();
  const sameLetters = record.fields.find((f) => f.name.toLowerCase() === lower);
  if (sameLetters) return sameLetters;
  let best: { field: FieldDef; distance: number } | undefined;
  // Names whose lengths differ by more than the tolerance cannot be close: skip them (a query may be 2000 letters).
  for (const field of record.fields.filter((f) => Math.abs(f.name.length - name.length) <= 2)) {
    const distance = editDistance(lower, field.name.toLowerCase());
    if (distance <= 2 && (!best || distance < best.distance)) best = { field, distance };
  }
  return best?.field;
}

/** The field a comparison names, if the client may search it. */
function searchableField(comparison: Comparison, record: RecordDef): FieldDef {
  const { field: name, position } = comparison;
  const field = record.fields.find((f) => f.name === name);
  if (!field) {
    const suggestion = closestField(record, name);
    failAt(
      position,
      `unknown field ${name} of ${record.name}${suggestion ? ` (did you mean ${suggestion.name}?)` : ''}`,
    );
  }
  // Protected values are stored as HMAC and ciphertext: a range or text comparison has nothing to work on.
  if (field.protection) failAt(position, `${name} is protected and cannot be searched`);
  // Repeating entries are one JSON column; a scalar comparison has no meaning on them.
  if (field.repeating) failAt(position, `${name} is a repeating field and cannot be searched`);
  return field;
}

/** The same value written right for the field, where the client's intent is plain. */
function rewrite(field: FieldDef, value: Literal): string | undefined {
  if (field.kind === 'date' && value.type === 'string' && isCalendarDate(value.value)) return `{date:'${value.value}'}`;
  if (field.kind === 'string' && (value.type === 'integer' || value.type === 'decimal')) return `'${value.value}'`;
  return undefined;
}

/** Throws unless the literal is a value of the field's kind. */
function checkLiteral(field: FieldDef, value: Literal): void {
  const { name, kind } = field;
  if (value.type === 'null') return;
  if (!ACCEPTED[kind].includes(value.type)) {
    const article = kind === 'integer' ? 'an' : 'a';
    const suggestion = rewrite(field, value);
    if (suggestion) failAt(value.position, `${name} is ${article} ${kind} field; write ${suggestion}`);
    failAt(
      value.position,
      `${name} is ${article} ${kind} field and takes ${EXPECTED[kind]}`,
      LITERAL_NAMES[value.type],
    );
  }
  // The parameter is cast to integer: a larger number would fail in the database instead of here.
  if (kind === 'integer' && !(Number(value.value) >= INT4_MIN && Number(value.value) <= INT4_MAX)) {
    failAt(value.position, `${value.value} is out of range for the integer field ${name}`);
  }
}

/** One comparison as a parenthesized condition; NULL becomes IS [NOT] NULL, as `= NULL` never holds in SQL. */
function comparisonSql(field: FieldDef, comparison: Comparison): RawBuilder<unknown> {
  const column = sql.ref(field.column);
  const { operator, value } = comparison;
  if (value.type === 'null') return operator === '=' ? sql`(${column} is null)` : sql`(${column} is not null)`;
  const cast = PARAMETER_CAST[field.kind];
  const parameter = cast ? sql`${value.value}::${sql.raw(cast)}` : sql`${value.value}`;
  return sql`(${column} ${sql.raw(OPERATOR_SQL[operator])} ${parameter})`;
}

function nodeSql(node: QueryNode, record: RecordDef): RawBuilder<unknown> {
  switch (node.kind) {
    case 'comparison': {
      const field = searchableField(node, record);
      checkLiteral(field, node.value);
      return comparisonSql(field, node);
    }
    case 'not':
      return sql`(not ${nodeSql(node.operand, record)})`;
    case 'and':
      return sql`(${nodeSql(node.left, record)} and ${nodeSql(node.right, record)})`;
    case 'or':
      return sql`(${nodeSql(node.left, record)} or ${nodeSql(node.right, record)})`;
  }
}

/**
 * Parses and types a query against a record; returns a condition for a WHERE clause, or undefined for
 * an empty or blank query (no filter). Throws QueryError for a syntax or type error.
 * @example
 * const condition = compileQuery("Amount > 100 AND EffectiveDate >= {date:'2024-01-01'}", recordDef('CollateralCollHold'));
 * // (("amount" > $1::numeric) and ("effective_date" >= $2::date)) with ['100', '2024-01-01']
 */
export function compileQuery(query: string, record: RecordDef): RawBuilder<unknown> | undefined {
  const tree = parseQuery(query);
  return tree && nodeSql(tree, record);
}

/** A date bound of a filter (catalog filters.ts) with the date the request gave. */
export interface DateBound {
  readonly field: FieldDef;
  readonly bound: 'start' | 'end';
  /** YYYY-MM-DD, a calendar date (checked by the request schema). */
  readonly date: string;
}

/**
 * The conditions of date bounds, AND-ed: on or after a start, on or before an end; undefined for none.
 * @example compileBounds([{ field: postDate, bound: 'start', date: '2024-01-01' }]) // ("post_date" >= $1::date)
 */
export function compileBounds(bounds: readonly DateBound[]): RawBuilder<unknown> | undefined {
  const conditions = bounds.map(
    ({ field, bound, date }) =>
      sql`(${sql.ref(field.column)} ${sql.raw(bound === 'start' ? '>=' : '<=')} ${date}::date)`,
  );
  return conditions.reduce<RawBuilder<unknown> | undefined>(
    (all, condition) => (all ? sql`(${all} and ${condition})` : condition),
    undefined,
  );
}
