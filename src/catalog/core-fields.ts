/**
 * Field sets the core declares. The spec shows only a few fields of the share and its first seven
 * sub-records ("not shown beyond the fields in this table"); the core's update schema (SymXchange facts)
 * holds them all, and a gateway must not refuse a field the core accepts. So these records take every
 * element of their XSD type, each with the rules of its XSD type, and coregate's own rules (lengths,
 * code ranges, read-only keys) where a field is given explicitly (docs/decisions.md, "SymXchange").
 */
import { date, int, money, rate, repeating, str, type FieldDef } from './fields.js';
import { elementsOf, recordElements, type XsdElement } from './symxchange/index.js';

/** The range of `xsd:short`, the XSD type of most of the core's integer codes. */
export const SHORT_MIN = -32768;
export const SHORT_MAX = 32767;

/** Decimals that are rates (three places, FM history's rate columns) rather than amounts, by name. */
const RATE_NAME = /Rate|Percent/;

/** The field an XSD scalar element declares, with the rules of its type only. */
function fieldOfType(name: string, xsdType: string): FieldDef {
  switch (xsdType) {
    case 'xsd:string':
      return str(name);
    case 'xsd:short':
      return int(name, { minimum: SHORT_MIN, maximum: SHORT_MAX });
    case 'xsd:int':
      return int(name);
    case 'xsd:decimal':
      return RATE_NAME.test(name) ? rate(name) : money(name);
    case 'xsd:date':
      return date(name);
    default:
      throw new Error(`${name}: no catalog kind for ${xsdType}`);
  }
}

/** A repeating element's entry type holds `EntryId` and a value element of the same name. */
function derivedField(element: XsdElement): FieldDef {
  if (element.maxOccurs === 1) return fieldOfType(element.name, element.type);
  const value = elementsOf(element.type).find((e) => e.name === element.name);
  if (!value || typeof element.maxOccurs !== 'number') {
    throw new Error(`${element.name}: a repeating element needs a value element and a bounded maxOccurs`);
  }
  return repeating(fieldOfType(element.name, value.type), element.maxOccurs);
}

/**
 * Every field of a record's XSD type, in the XSD's order: the given fields as they are, the others derived
 * from their XSD type. None is left out (a field the core accepts must not be refused); a given field the
 * XSD lacks is a programming error.
 * @example coreRecordFields('ShareNote', [str('Code')]).map((f) => f.name).slice(0, 3) // ['Code', 'EnterDate', 'EnterTime']
 */
export function coreRecordFields(recordName: string, given: readonly FieldDef[]): FieldDef[] {
  const elements = recordElements(recordName);
  if (elements.length === 0) throw new Error(`${recordName} has no XSD type in the SymXchange facts`);
  const byName = new Map(given.map((field) => [field.name, field]));
  for (const name of byName.keys()) {
    if (!elements.some((e) => e.name === name)) throw new Error(`${recordName}.${name} is not in the core's XSD`);
  }
  return elements.map((e) => byName.get(e.name) ?? derivedField(e));
}
