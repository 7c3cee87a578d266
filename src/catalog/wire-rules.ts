/**
 * What the core's element can carry at all: a value's wire rules, from the field's XSD type (DESIGN, Errors).
 * `xsd:short` and `xsd:int` have ranges, an `xsd:date` is a day some calendar has (year 0001 onwards), a
 * repeating element holds at most `maxOccurs` entries whose EntryIds are `xsd:short`s. In store mode these
 * are field rules among the others (the catalog's ranges include them); in gateway mode they are the only
 * rules the gateway judges: a share update's field that breaks one is reported failed and not sent, and the
 * core judges the rest.
 */
import { SHORT_MAX, SHORT_MIN } from './core-fields.js';
import { invalidDate, isCalendarDate, type FieldRuleViolation } from './field-rules.js';
import { INT4_MAX, INT4_MIN, type FieldDef } from './fields.js';
import type { RecordDef } from './records.js';
import { elementsOf, recordElements, type XsdElement } from './symxchange/index.js';

const RANGES: Readonly<Record<string, readonly [number, number]>> = {
  'xsd:short': [SHORT_MIN, SHORT_MAX],
  'xsd:int': [INT4_MIN, INT4_MAX],
};

/** The violation of one scalar value in an element of `xsdType`, naming `what`. */
function scalarViolation(what: string, xsdType: string, value: unknown): FieldRuleViolation | undefined {
  if (value === null || value === undefined) return undefined;
  const range = RANGES[xsdType];
  if (range && typeof value === 'number' && (value < range[0] || value > range[1]))
    return { code: 'OUT_OF_RANGE', message: `${what} must be between ${range[0]} and ${range[1]} (${xsdType})` };
  if (xsdType === 'xsd:date' && typeof value === 'string' && !isCalendarDate(value)) return invalidDate(what, value);
  return undefined;
}

/** The XSD elements of each record, by field name: read once per record. */
const elementsByRecord = new WeakMap<RecordDef, ReadonlyMap<string, XsdElement>>();

function elementOf(record: RecordDef, field: FieldDef): XsdElement | undefined {
  let elements = elementsByRecord.get(record);
  if (!elements)
    elementsByRecord.set(record, (elements = new Map(recordElements(record.name).map((e) => [e.name, e]))));
  return elements.get(field.name);
}

/**
 * The first wire rule a field's value breaks, or undefined (also for a field the core's XSD lacks).
 * @example wireRuleViolation(recordDef('ShareName'), fieldOf(recordDef('ShareName'), 'Type')!, 40000)?.code // 'OUT_OF_RANGE'
 */
export function wireRuleViolation(record: RecordDef, field: FieldDef, value: unknown): FieldRuleViolation | undefined {
  const element = elementOf(record, field);
  if (!element) return undefined;
  if (!field.repeating || !Array.isArray(value)) return scalarViolation(field.name, element.type, value);
  const maxOccurs = element.maxOccurs;
  if (typeof maxOccurs === 'number' && value.length > maxOccurs)
    return {
      code: 'TOO_MANY_ENTRIES',
      message: `${field.name} holds at most ${maxOccurs} entries, got ${value.length}`,
    };
  const entry = elementsOf(element.type);
  const typeOf = (name: string) => entry.find((e) => e.name === name)?.type ?? 'xsd:string';
  for (const item of value as Record<string, unknown>[]) {
    const entryId = scalarViolation(`${field.name} EntryId`, typeOf('EntryId'), item.EntryId);
    if (entryId) return { ...entryId, code: 'INVALID_ENTRY_ID' };
    const violation = scalarViolation(field.name, typeOf(field.name), item[field.name]);
    if (violation) return { ...violation, message: `${violation.message} (EntryId ${String(item.EntryId)})` };
  }
  return undefined;
}
