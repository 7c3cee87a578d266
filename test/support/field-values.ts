/**
 * fast-check arbitraries of valid values for catalog fields, so property tests follow the catalog.
 */
import fc from 'fast-check';
import { CONTROL_CHARACTER, MONEY_SCALE, RATE_SCALE, type FieldDef } from '../../src/catalog/index.js';

function scalar(field: FieldDef): fc.Arbitrary<unknown> {
  switch (field.kind) {
    case 'string':
      if (field.pattern) return fc.stringMatching(new RegExp(field.pattern));
      return fc
        .string({ maxLength: field.maxLength ?? 40, unit: 'grapheme-ascii' })
        .filter((s) => !CONTROL_CHARACTER.test(s));
    case 'integer':
      return fc.integer({ min: field.minimum!, max: field.maximum! });
    case 'money':
    case 'rate': {
      const factor = 10 ** (field.kind === 'money' ? MONEY_SCALE : RATE_SCALE);
      return fc
        .integer({ min: Math.ceil(field.minimum! * factor), max: Math.floor(field.maximum! * factor) })
        .map((units) => units / factor);
    }
    case 'date':
      return fc
        .date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true })
        .map((d) => d.toISOString().slice(0, 10));
  }
}

/** A valid value for the field: a scalar, or entries with distinct EntryIds for a repeating field. */
export function validValue(field: FieldDef): fc.Arbitrary<unknown> {
  if (!field.repeating) return scalar(field);
  return fc
    .uniqueArray(fc.integer({ min: 1, max: field.repeating.maxEntries }), { minLength: 1, maxLength: 3 })
    .chain((ids) => fc.tuple(...ids.map((id) => scalar(field).map((value) => ({ EntryId: id, [field.name]: value })))));
}

/** One valid value, deterministic, for example-based tests. */
export function sampleValue(field: FieldDef, seed = 1): unknown {
  return fc.sample(validValue(field), { numRuns: 1, seed })[0];
}
