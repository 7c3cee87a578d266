/**
 * The rules a well-typed value must also meet to be stored in a field: length, pattern, range, scale,
 * calendar validity. A share update reports a broken rule per field instead of rejecting the request
 * (spec, updateShare rules 1–2).
 */
import { MONEY_SCALE, RATE_SCALE, type FieldDef } from './fields.js';

export type FieldRuleCode =
  | 'READ_ONLY_FIELD'
  | 'NOT_UPDATABLE_AT_CORE'
  | 'STRING_TOO_LONG'
  | 'PATTERN_MISMATCH'
  | 'OUT_OF_RANGE'
  | 'TOO_MANY_DECIMALS'
  | 'INVALID_DATE'
  | 'INVALID_CHARACTER'
  | 'INVALID_ENTRY_ID'
  | 'TOO_MANY_ENTRIES';

export interface FieldRuleViolation {
  readonly code: FieldRuleCode;
  readonly message: string;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** Control characters: a core's fields are single-line text, and PostgreSQL cannot store NUL. */
// eslint-disable-next-line no-control-regex
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/**
 * True for a real calendar date in YYYY-MM-DD form.
 * @example isCalendarDate('2024-02-29') // true
 * @example isCalendarDate('2023-02-30') // false
 */
export function isCalendarDate(value: string): boolean {
  const match = DATE.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * Decimal places of a number as the client wrote it: JS prints the shortest string that reads back as
 * the same double, so this is exact where scaling by 10^n would drift for large amounts.
 * @example decimalPlaces(1234567890123.45) // 2
 * @example decimalPlaces(1e-7) // 7
 */
export function decimalPlaces(value: number): number {
  const [mantissa = '', exponent = '0'] = String(value).split('e');
  const fraction = mantissa.split('.')[1]?.length ?? 0;
  return Math.max(0, fraction - Number(exponent));
}

/**
 * The failure of a date no calendar has (or not of the form YYYY-MM-DD): the same words for the store's
 * field rules and the gateway's wire rules, so both faces report it alike.
 */
export function invalidDate(name: string, value: unknown): FieldRuleViolation {
  return { code: 'INVALID_DATE', message: `${name} must be a calendar date YYYY-MM-DD, got "${String(value)}"` };
}

/**
 * The first rule a value breaks, or undefined. `null` clears a field and breaks no rule. The value's
 * JSON type has already been checked by the request schema.
 */
export function fieldRuleViolation(field: FieldDef, value: unknown): FieldRuleViolation | undefined {
  if (value === null) return undefined;
  const range = () =>
    (field.minimum !== undefined && (value as number) < field.minimum) ||
    (field.maximum !== undefined && (value as number) > field.maximum)
      ? {
          code: 'OUT_OF_RANGE' as const,
          message: `${field.name} must be between ${field.minimum} and ${field.maximum}`,
        }
      : undefined;
  switch (field.kind) {
    case 'string': {
      const text = value as string;
      if (CONTROL_CHARACTER.test(text)) {
        return { code: 'INVALID_CHARACTER', message: `${field.name} must not contain control characters` };
      }
      if (field.maxLength !== undefined && [...text].length > field.maxLength) {
        return { code: 'STRING_TOO_LONG', message: `${field.name} must be at most ${field.maxLength} characters` };
      }
      if (field.pattern && !new RegExp(field.pattern).test(text)) {
        return { code: 'PATTERN_MISMATCH', message: `${field.name} must match ${field.pattern}` };
      }
      return undefined;
    }
    case 'integer':
      return range();
    case 'money':
    case 'rate': {
      const scale = field.kind === 'money' ? MONEY_SCALE : RATE_SCALE;
      if (decimalPlaces(value as number) > scale) {
        return { code: 'TOO_MANY_DECIMALS', message: `${field.name} takes at most ${scale} decimal places` };
      }
      return range();
    }
    case 'date':
      return isCalendarDate(value as string) ? undefined : invalidDate(field.name, value);
  }
}
