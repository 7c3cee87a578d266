/**
 * Tokens of the search query language (DESIGN, "Lists, paging, search"), plus what every stage of the
 * query compiler shares: the error it reports and the limits it enforces.
 */
import { CONTROL_CHARACTER, isCalendarDate } from '../catalog/field-rules.js';

/** Limits against abuse: a query is a handful of comparisons, not a program. */
export const QUERY_LIMITS = { length: 2000, depth: 32, comparisons: 100 } as const;

/**
 * A syntax or type error in a query, at the 0-based offset (a JS string index) of the offending token.
 * The HTTP layer answers it with 400 `INVALID_QUERY`.
 * @example new QueryError("unexpected ')' at position 20", 20)
 */
export class QueryError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
    this.name = 'QueryError';
  }
}

/**
 * Throws a QueryError whose message ends with the position, so a reader can find the token.
 * @example failAt(8, "expected a value after '>'", 'the end of the query')
 * // QueryError: expected a value after '>', found the end of the query at position 8
 */
export function failAt(position: number, detail: string, found?: string): never {
  throw new QueryError(`${detail}${found === undefined ? '' : `, found ${found}`} at position ${position}`, position);
}

export type ComparisonOperator = '=' | '<>' | '<' | '<=' | '>' | '>=';
export type Connective = 'AND' | 'OR' | 'NOT';
/** `value` is the number as written, the string's content, or the date `YYYY-MM-DD`; empty for NULL. */
export type LiteralType = 'integer' | 'decimal' | 'string' | 'date' | 'null';

export interface Literal {
  readonly type: LiteralType;
  readonly value: string;
  readonly position: number;
}

interface TokenBase {
  readonly position: number;
  /** The token as written, for error messages. */
  readonly text: string;
}

export type Token =
  | (TokenBase & { readonly kind: 'field'; readonly name: string })
  | (TokenBase & { readonly kind: 'connective'; readonly connective: Connective })
  | (TokenBase & { readonly kind: 'operator'; readonly operator: ComparisonOperator })
  | (TokenBase & { readonly kind: 'literal'; readonly literal: Literal })
  | (TokenBase & { readonly kind: '(' | ')' | 'end' });

const WHITESPACE = /\s+/y;
const WORD = /[A-Za-z_][A-Za-z0-9_]*/y;
// A sign belongs to the number: `Amount>-3` is `>` then `-3`.
const NUMBER = /-?[0-9]+(?:\.[0-9]+)?/y;
const NUMBER_TAIL = /[A-Za-z0-9_.]/y;
// `!=` is read as `<>`: integrations written against other SQL dialects use both.
const OPERATOR = /<>|<=|>=|!=|=|<|>/y;
const DATE_OPEN = /\{\s*date\s*:\s*/iy;
const DATE_CLOSE = /\s*\}/y;
const CONNECTIVES: ReadonlySet<string> = new Set<Connective>(['AND', 'OR', 'NOT']);

/** The match of a sticky pattern at `position`, or undefined. */
function matchAt(pattern: RegExp, text: string, position: number): string | undefined {
  pattern.lastIndex = position;
  return pattern.exec(text)?.[0];
}

/** A character for an error message; invisible ones by code point. */
function describeCharacter(character: string): string {
  const codePoint = character.codePointAt(0) ?? 0;
  return /[\p{L}\p{N}\p{P}\p{S}]/u.test(character)
    ? `'${character}'`
    : `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** A `'…'` string starting at `start` (`''` is a quote); returns its content and the offset after it. */
function readString(query: string, start: number): { value: string; end: number } {
  let value = '';
  let position = start + 1;
  for (;;) {
    const close = query.indexOf("'", position);
    if (close < 0) failAt(start, 'unterminated string starting');
    value += query.slice(position, close);
    if (query[close + 1] !== "'") {
      // PostgreSQL cannot take NUL, and no field of a core holds control characters.
      if (CONTROL_CHARACTER.test(value)) failAt(start, 'a string must not contain control characters');
      // Nor can it store half of a UTF-16 pair (the edges refuse one in a body; a query is refused here too).
      if (!value.isWellFormed()) failAt(start, 'a string must not contain an unpaired UTF-16 surrogate');
      return { value, end: close + 1 };
    }
    value += "'";
    position = close + 2;
  }
}

/** `{date:'YYYY-MM-DD'}` starting at `start`; returns the date and the offset after the closing brace. */
function readDate(query: string, start: number): { value: string; end: number } {
  const open = matchAt(DATE_OPEN, query, start);
  const quote = start + (open?.length ?? 0);
  if (open === undefined || query[quote] !== "'") failAt(start, "expected a date written {date:'YYYY-MM-DD'}");
  const { value, end } = readString(query, quote);
  const close = matchAt(DATE_CLOSE, query, end);
  if (close === undefined) failAt(end, "expected '}' to close the date");
  if (!isCalendarDate(value)) failAt(quote, `'${value}' is not a calendar date YYYY-MM-DD`);
  return { value, end: end + close.length };
}

/**
 * Splits a query into tokens, ending with an `end` token at the query's length.
 * @example tokenize('Amount > 12.5').map((t) => t.kind) // ['field', 'operator', 'literal', 'end']
 */
export function tokenize(query: string): Token[] {
  if (query.length > QUERY_LIMITS.length) {
    failAt(QUERY_LIMITS.length, `the query exceeds the limit of ${QUERY_LIMITS.length} characters`);
  }
  const tokens: Token[] = [];
  let position = 0;
  const push = (token: Token) => {
    tokens.push(token);
    position += token.text.length;
  };
  const literal = (type: LiteralType, value: string, end: number) =>
    push({ kind: 'literal', literal: { type, value, position }, position, text: query.slice(position, end) });

  while (position < query.length) {
    const space = matchAt(WHITESPACE, query, position);
    if (space !== undefined) {
      position += space.length;
      continue;
    }
    const character = query[position]!;
    const word = matchAt(WORD, query, position);
    const number = matchAt(NUMBER, query, position);
    const operator = matchAt(OPERATOR, query, position);
    if (word !== undefined) {
      const upper = word.toUpperCase();
      if (upper === 'NULL') literal('null', '', position + word.length);
      else if (CONNECTIVES.has(upper))
        push({ kind: 'connective', connective: upper as Connective, position, text: word });
      else push({ kind: 'field', name: word, position, text: word });
    } else if (number !== undefined) {
      if (matchAt(NUMBER_TAIL, query, position + number.length) !== undefined) {
        failAt(position, 'malformed number (write numbers like 12, -3 or 12.5)');
      }
      literal(number.includes('.') ? 'decimal' : 'integer', number, position + number.length);
    } else if (operator !== undefined) {
      const normalized = operator === '!=' ? '<>' : (operator as ComparisonOperator);
      push({ kind: 'operator', operator: normalized, position, text: operator });
    } else if (character === "'") {
      const { value, end } = readString(query, position);
      literal('string', value, end);
    } else if (character === '{') {
      const { value, end } = readDate(query, position);
      literal('date', value, end);
    } else if (character === '(' || character === ')') {
      push({ kind: character, position, text: character });
    } else {
      failAt(position, `unexpected character ${describeCharacter(String.fromCodePoint(query.codePointAt(position)!))}`);
    }
  }
  tokens.push({ kind: 'end', position: query.length, text: '' });
  return tokens;
}
