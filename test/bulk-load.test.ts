/**
 * Bulk loading writes exactly what the records hold: every record type, random values of every field
 * (text with tabs, newlines, backslashes and any Unicode included), through COPY and back, on both
 * databases. Protected fields land only as their HMAC and their ciphertext.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { RECORDS, type FieldDef, type RecordDef } from '../src/catalog/index.js';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { copyPlan } from '../src/store/bulk-load.js';
import type { Database } from '../src/database/database.js';
import { protectedColumns, protectedText } from '../src/database/schema.js';
import { selectList, type Row, type WireRecord } from '../src/store/records.js';
import { validValue } from './support/field-values.js';
import { openTestDatabase } from './support/harness.js';

const secrets = secretsFromMaster(Buffer.alloc(32, 9));

/** Any text PostgreSQL can hold (everything but NUL), up to the field's length. */
function anyText(field: FieldDef): fc.Arbitrary<string> {
  return fc.string({ maxLength: field.maxLength ?? 40, unit: 'binary' }).map((s) => s.replaceAll('\0', ''));
}

/** A record with a value for every field; text fields get any text or null, the others (and keys) valid values. */
function anyRecord(record: RecordDef): fc.Arbitrary<WireRecord> {
  const writable = record.fields.filter((field) => field.column !== record.identityColumn);
  const isKey = (field: FieldDef) => record.primaryKey.includes(field.column);
  return fc.record(
    Object.fromEntries(
      writable.map((field) => [
        field.name,
        field.kind === 'string' && !field.repeating && !field.pattern && !field.protection && !isKey(field)
          ? fc.option(anyText(field), { nil: null })
          : validValue(field),
      ]),
    ),
  );
}

/**
 * For each unique index of the record (schema.sql), the text field that makes its entries distinct: a
 * column the index covers, alone or inside an expression such as `lower(user_name)`.
 */
function uniqueTextFields(record: RecordDef): FieldDef[] {
  return record.indexes
    .filter((index) => index.unique)
    .map((index) => {
      const covers = (field: FieldDef) => index.on.some((entry) => new RegExp(`\\b${field.column}\\b`).test(entry));
      const field = record.fields.find((f) => covers(f) && f.kind === 'string' && !f.repeating && !f.protection);
      if (!field)
        throw new Error(`no text field to keep ${index.name} unique in a generated batch: teach anyBatch this index`);
      return field;
    });
}

/**
 * Makes the batch's values of each unique index distinct, also under any case mapping the index may
 * apply (`lower()` per character in a libc or C collation, or ICU's, which can change lengths): each
 * value starts with its record's position, a digit, which no case mapping changes or produces. Nulls
 * stay null (a unique index admits any number of them).
 */
function distinctUnderUniqueIndexes(record: RecordDef, batch: WireRecord[]): WireRecord[] {
  const fields = uniqueTextFields(record);
  return batch.map((values, position) => {
    const distinct = { ...values };
    for (const field of fields) {
      const value = values[field.name];
      if (typeof value !== 'string') continue;
      // By code points, as varchar counts its length, so a surrogate pair is never cut in two.
      distinct[field.name] = [String(position), ...value].slice(0, field.maxLength ?? 40).join('');
    }
    return distinct;
  });
}

/**
 * A batch for one COPY: a record with every field, then up to three holding only some of theirs, all
 * with distinct primary keys and distinct values under every unique index. The batch's column list is
 * the union of what its records fill.
 */
function anyBatch(record: RecordDef): fc.Arbitrary<WireRecord[]> {
  const keyFields = record.fields.filter((field) => record.primaryKey.includes(field.column));
  const partial = anyRecord(record).chain((values) =>
    fc
      .subarray(Object.keys(values).filter((name) => !keyFields.some((field) => field.name === name)))
      .map((kept) =>
        Object.fromEntries(
          Object.entries(values).filter(
            ([name]) => kept.includes(name) || keyFields.some((field) => field.name === name),
          ),
        ),
      ),
  );
  return fc.tuple(anyRecord(record), fc.array(partial, { maxLength: 3 })).map(([full, partials]) => {
    const seen = new Set<string>();
    const batch = [full, ...partials].filter((values) => {
      const key = JSON.stringify(keyFields.map((field) => values[field.name]));
      return !seen.has(key) && Boolean(seen.add(key));
    });
    return distinctUnderUniqueIndexes(record, batch);
  });
}

/** Parent key values of a record type's table (a fixed parent is enough here). */
function parentKeys(record: RecordDef): Row {
  return Object.fromEntries(
    record.keyColumns.map((key) => [
      key.column,
      key.sqlType === 'integer' ? 1 : '1'.repeat(Number(/\d+/.exec(key.sqlType)?.[0] ?? 1)),
    ]),
  );
}

const postgresUrl = process.env.TEST_DATABASE_URL;
const backends = [
  { name: 'the embedded database', url: undefined },
  ...(postgresUrl ? [{ name: 'PostgreSQL', url: postgresUrl }] : []),
];

for (const backend of backends) {
  describe(`bulk loading on ${backend.name}`, () => {
    let database: Database;
    before(async () => {
      database = await openTestDatabase(backend);
    });
    after(async () => {
      await database.close();
    });

    for (const record of RECORDS) {
      test(`${record.name}: COPY lines read back as the values they were made from, absent fields as NULL`, async () => {
        const plan = copyPlan(record);
        const readable = record.fields.filter((field) => !field.protection && field.column !== record.identityColumn);
        const hidden = record.fields.filter((field) => field.protection);
        await fc.assert(
          fc.asyncProperty(anyBatch(record), async (batch) => {
            await sql.raw(`truncate ${record.table}`).execute(database.db);
            const encoded = plan.encode(
              batch.map((values) => ({ values, keys: parentKeys(record) })),
              secrets,
            );
            assert.equal(encoded.rows, batch.length);
            await database.bulkLoad(1, ([session]) => session!.copy(plan.table, encoded.columns, encoded.text, false));
            const protectedSelection = hidden.flatMap((field) => Object.values(protectedColumns(field)));
            const columns = [
              ...(readable.length > 0 ? [sql.raw(selectList(readable))] : []),
              ...protectedSelection.map((column) => sql.ref(column)),
            ];
            const { rows } =
              await sql<Row>`select ${sql.join(columns)} from ${sql.table(record.table)} order by ctid`.execute(
                database.db,
              );
            assert.equal(rows.length, batch.length);
            batch.forEach((values, index) => {
              const row = rows[index] as Row;
              for (const field of readable) assert.deepEqual(row[field.name], values[field.name] ?? null, field.name);
              for (const field of hidden) {
                const { hmac, cipher } = protectedColumns(field);
                // A scalar's text, or a repeating field's entries sealed together (protectedText).
                const clear = protectedText(field, values[field.name]);
                if (clear === null) {
                  assert.equal(row[hmac], null);
                  assert.equal(row[cipher], null);
                  continue;
                }
                assert.deepEqual(Buffer.from(row[hmac] as Uint8Array), secrets.lookupHash(field.protection!, clear));
                assert.equal(secrets.decrypt(row[cipher] as Uint8Array), clear);
              }
            });
          }),
          { numRuns: 15 },
        );
      });
    }
  });
}
