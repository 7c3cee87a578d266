/**
 * The spec's update rules on every face (spec, updateShare rules 1–2 and Versioning; DESIGN, Errors), as a
 * property over every share update operation on both families and both databases: a request mixes valid
 * fields with fields that break each kind of rule (a length, coregate's range, the core's wire range, a
 * calendar day, a read-only field, more entries than the element holds). The answer is a 200 whose
 * FailedUpdateStatus has the family's shape (P2 one item per failed field in request order; P1 one object,
 * the first failed field's, its message naming every one); the valid fields are applied and read back
 * through the share reads, the broken ones left as they were, and file-maintenance history holds only the
 * applied fields. The SymXchange SOAP face (a node-soap client) answers exactly as the JSON API, and a
 * gateway in front of it as well: the gateway reports the fields the core's elements cannot carry and does
 * not send them, and merges the core's failures with its own. On P2 the core answers one FailedUpdateStatus
 * element (the XSD's maxOccurs), so the core's several failures reach the gateway as one item naming each.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import type soap from 'soap';
import { FAMILIES, wireRuleViolation, type Family, type FieldDef, type RecordDef } from '../src/catalog/index.js';
import { updatableFieldsName } from '../src/catalog/schemas.js';
import { loadConfig } from '../src/config.js';
import { createSymxMapping } from '../src/symxchange/mapping.js';
import { OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { operationName, SHARE_UPDATE_RECORDS } from '../src/operations/share-update.js';
import { operationPath, type AnyOperation } from '../src/operations/types.js';
import { seedDatabase } from '../src/seed/load.js';
import { validValue } from './support/field-values.js';
import { adminCredentials, BACKENDS, createHarness, type Harness } from './support/harness.js';
import { firstShareTarget, shareAddress, type ShareTarget } from './support/share-targets.js';
import { callSoap, jsonOfSoapAnswer, soapArguments, soapClients } from './support/soap-client.js';

type Json = Record<string, unknown>;
interface Failure {
  Record: string | null;
  ErrorCode: string | null;
  ErrorMessage: string | null;
  PrimaryKeyField: { Name: string; Value: string }[];
}

/** A kind of rule a value breaks, the value that breaks it, and the code the failure carries. */
interface Breaker {
  readonly kind: string;
  readonly code: string;
  readonly fits: (field: FieldDef, family: Family) => boolean;
  readonly value: (field: FieldDef) => unknown;
}

const plain = (field: FieldDef) => !field.protection && !field.repeating;
const BREAKERS: readonly Breaker[] = [
  {
    kind: 'too long',
    code: 'STRING_TOO_LONG',
    fits: (f) => plain(f) && !f.readOnly && f.kind === 'string' && f.maxLength !== undefined && !f.pattern,
    value: (f) => 'L'.repeat(f.maxLength! + 1),
  },
  {
    kind: "past coregate's range",
    code: 'OUT_OF_RANGE',
    fits: (f) => plain(f) && !f.readOnly && f.kind === 'integer' && f.maximum! < 32_767,
    value: (f) => f.maximum! + 1,
  },
  {
    kind: "past the core's wire range",
    code: 'OUT_OF_RANGE',
    fits: (f) => plain(f) && !f.readOnly && f.kind === 'integer',
    value: () => 2 ** 31,
  },
  {
    kind: 'no calendar day',
    code: 'INVALID_DATE',
    fits: (f) => plain(f) && !f.readOnly && f.kind === 'date',
    value: () => '2023-02-30',
  },
  {
    kind: 'read-only',
    code: 'READ_ONLY_FIELD',
    fits: (f) => plain(f) && f.readOnly === true && f.kind !== 'date',
    value: (f) => (f.kind === 'string' ? 'RO' : 1),
  },
  {
    kind: 'more entries than the element holds',
    code: 'TOO_MANY_ENTRIES',
    fits: (f) => !f.protection && !f.readOnly && f.repeating !== undefined,
    value: (f) => Array.from({ length: f.repeating!.maxEntries + 1 }, (_, i) => ({ EntryId: i + 1, [f.name]: null })),
  },
];

const mapping = createSymxMapping(OPERATIONS, SHARED_SCHEMAS);

/** The elements of a complex type of the mapping, its base's first, in sequence order. */
function elementsOf(typeName: string): { name: string; type: string }[] {
  const type = mapping.complexType(typeName);
  const elements = type.base ? elementsOf(type.base) : [];
  const visit = (particles: readonly unknown[]) =>
    particles.forEach((p) => {
      const particle = p as { kind: string; name?: string; type?: string; particles?: readonly unknown[] };
      if (particle.kind === 'element') elements.push({ name: particle.name!, type: particle.type! });
      else if (particle.particles) visit(particle.particles);
    });
  visit(type.content?.particles ?? []);
  return elements;
}

/** The order of an update's fields on the wire: its `<Record>Fields` element's sequence. */
function wireOrder(op: AnyOperation, record: RecordDef): string[] {
  const request = elementsOf(mapping.wireOperation(op).request.child.type);
  const fields = request.find((element) => element.name === `${record.name}Fields`)!;
  return elementsOf(fields.type).map((element) => element.name);
}

/** A request's fields: valid ones and broken ones, each field once. */
function fieldsArbitrary(op: AnyOperation, record: RecordDef, family: Family) {
  const order = wireOrder(op, record);
  const inFamily = record.fields.filter((f) => f.families.includes(family));
  const valid = inFamily.filter((f) => plain(f) && !f.readOnly);
  const breakers = BREAKERS.flatMap((breaker) => {
    const fields = inFamily.filter((f) => breaker.fits(f, family));
    return fields.length > 0 ? [{ breaker, fields }] : [];
  });
  const broken = fc
    .uniqueArray(fc.constantFrom(...breakers), { minLength: 1, maxLength: 3, selector: (b) => b.breaker.kind })
    .chain((chosen) =>
      fc.tuple(
        ...chosen.map(({ breaker, fields }) =>
          fc.constantFrom(...fields).map((field) => ({ field, value: breaker.value(field), code: breaker.code })),
        ),
      ),
    );
  const good = fc
    .uniqueArray(fc.constantFrom(...valid), { minLength: 1, maxLength: 3, selector: (f) => f.name })
    .chain((fields) => fc.tuple(...fields.map((field) => validValue(field).map((value) => ({ field, value })))));
  return (
    fc
      .tuple(good, broken)
      .map(([g, b]) => {
        const brokenNames = new Set(b.map((x) => x.field.name));
        return { good: g.filter((x) => !brokenNames.has(x.field.name)), broken: b };
      })
      .filter(({ good, broken }) => good.length > 0 && new Set(broken.map((b) => b.field.name)).size === broken.length)
      // In the wire's element order: a SOAP request's elements come in that order, so the same request
      // says the same on both faces.
      .map(({ good, broken }) =>
        [...good.map((g) => ({ ...g, code: undefined as string | undefined })), ...broken].sort(
          (a, b) => order.indexOf(a.field.name) - order.indexOf(b.field.name),
        ),
      )
  );
}

/** Gateway settings for a core at `url`. */
const gatewaySettings = (url: string) => {
  const config = loadConfig({ COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: url });
  return { core: config.core, symxchange: config.symxchange };
};

/**
 * What the gateway answers where the store answered `store`: the same, but on P2 the failures the core
 * judged (all but those of fields the core's elements cannot carry) come back as the core's one element,
 * at the place of the first of them, its message naming each.
 */
function throughGateway(store: Json, family: Family, carriedAway: ReadonlySet<string>): Json {
  if (family === 'P1') return store;
  const status = store.UpdateStatus as { FailedUpdateStatus: Failure[] };
  const named = (failure: Failure) => /^[A-Za-z0-9]+/.exec(failure.ErrorMessage ?? '')?.[0] ?? '';
  const byCore = status.FailedUpdateStatus.filter((failure) => !carriedAway.has(named(failure)));
  if (byCore.length <= 1) return store;
  const merged = { ...byCore[0]!, ErrorMessage: byCore.map((failure) => failure.ErrorMessage).join('; ') };
  const failures = status.FailedUpdateStatus.flatMap((failure) =>
    failure === byCore[0] ? [merged] : byCore.includes(failure) ? [] : [failure],
  );
  return { ...store, UpdateStatus: { ...status, FailedUpdateStatus: failures } };
}

for (const backend of BACKENDS) {
  describe(`the update rules on every face, on ${backend.name}`, () => {
    let core: Harness;
    let gateway: Harness;
    let clients: Map<string, soap.Client>;
    const targets = new Map<string, ShareTarget>();

    before(async () => {
      core = await createHarness(backend, { soapAuth: 'credentials' });
      await seedDatabase(core.database, core.secrets, { accounts: 3, seed: 627 });
      for (const record of SHARE_UPDATE_RECORDS) targets.set(record.name, await firstShareTarget(core, record));
      const url = await core.app.listen({ port: 0, host: '127.0.0.1' });
      gateway = await createHarness(backend, gatewaySettings(url));
      clients = await soapClients(
        url,
        OPERATIONS.filter((op) => op.service === 'account'),
      );
    });
    after(async () => {
      await gateway?.close();
      await core?.close();
    });

    const read = async (record: RecordDef, family: Family, fields: readonly FieldDef[]) => {
      const response = await core.call(
        operationPath({ family, service: 'account', name: `get${record.name}SelectFields` }),
        {
          ...shareAddress(record, targets.get(record.name)!),
          SelectableFields: { [`${record.name}Fields`]: Object.fromEntries(fields.map((f) => [f.name, true])) },
        },
      );
      assert.equal(response.statusCode, 200, response.body);
      return response.json()[record.name] as Json;
    };
    const history = async (record: RecordDef) => {
      const { rows } = await sql<{ field: string; n: number }>`select field_name as field, count(*)::int as n
        from account_fm_history where account_number = ${targets.get(record.name)!.accountNumber}
        and record_name = ${record.name} group by field_name`.execute(core.database.db);
      return new Map(rows.map((row) => [row.field, row.n]));
    };

    test("the persistent WSDL declares one FailedUpdateStatus, as the vendor's XSD does; the 2022.01 WSDL repeats it", async () => {
      const occurs = async (path: string) => {
        const wsdl = await (await fetch(`${core.app.listeningOrigin}${path}?wsdl`)).text();
        return /<xsd:element name="FailedUpdateStatus" minOccurs="0" maxOccurs="([^"]+)"/.exec(wsdl)?.[1];
      };
      assert.equal(await occurs('/SymXchange/account'), '1');
      assert.equal(await occurs('/SymXchange/2022.01/account'), 'unbounded');
    });

    for (const family of FAMILIES) {
      for (const record of SHARE_UPDATE_RECORDS) {
        const op = OPERATIONS.find((o) => o.name === operationName(record) && o.family === family) as AnyOperation;
        test(`${family} ${op.name}: broken fields fail alone, on JSON, SOAP and through a gateway`, async () => {
          await fc.assert(
            fc.asyncProperty(fieldsArbitrary(op, record, family), async (fields) => {
              const body = {
                ...shareAddress(record, targets.get(record.name)!),
                [updatableFieldsName(record, family)]: Object.fromEntries(fields.map((f) => [f.field.name, f.value])),
              };
              const good = fields.filter((f) => f.code === undefined);
              const broken = fields.filter((f) => f.code !== undefined);
              const scalarsBroken = broken.filter((f) => !f.field.repeating).map((f) => f.field);
              const before = await read(record, family, scalarsBroken);
              const historyBefore = await history(record);

              const json = await core.call(operationPath(op), body);
              assert.equal(json.statusCode, 200, json.body);
              const answer = json.json() as Json;
              const status = answer.UpdateStatus as { isAllFieldsUpdateSuccess: boolean; FailedUpdateStatus: unknown };
              assert.equal(status.isAllFieldsUpdateSuccess, false);
              if (family === 'P2') {
                const failures = status.FailedUpdateStatus as Failure[];
                assert.deepEqual(
                  failures.map((f) => f.ErrorCode),
                  broken.map((f) => f.code),
                  'one item per failed field, in request order',
                );
              } else {
                const failure = status.FailedUpdateStatus as Failure;
                assert.ok(!Array.isArray(failure), 'P1 is never an array');
                assert.equal(failure.ErrorCode, broken[0]!.code, "the first failed field's code");
                assert.equal(failure.Record, record.name);
                const messages = failure.ErrorMessage!.split('; ');
                assert.deepEqual(
                  messages.map((m) => m.split(' ')[0]),
                  broken.map((f) => f.field.name),
                  'the message names every failed field, in request order',
                );
              }

              // The valid fields are applied, the broken ones left as they were.
              const after = await read(record, family, [...good.map((g) => g.field), ...scalarsBroken]);
              for (const { field, value } of good) assert.deepEqual(after[field.name], value, field.name);
              for (const field of scalarsBroken) assert.deepEqual(after[field.name], before[field.name], field.name);
              // History holds only applied fields.
              const historyAfter = await history(record);
              for (const field of broken.map((f) => f.field.name))
                assert.equal(historyAfter.get(field), historyBefore.get(field), `no history for ${field}`);

              const viaSoap = await callSoap(
                clients,
                op,
                soapArguments(op, { ...body, Credentials: adminCredentials }, 'rules-1'),
              );
              assert.deepEqual(jsonOfSoapAnswer(op, viaSoap, SHARED_SCHEMAS), answer, 'the SOAP face answers alike');

              const viaGateway = await gateway.call(operationPath(op), body);
              assert.equal(viaGateway.statusCode, 200, viaGateway.body);
              const carriedAway = new Set(
                broken.filter((f) => wireRuleViolation(record, f.field, f.value)).map((f) => f.field.name),
              );
              assert.deepEqual(
                viaGateway.json(),
                throughGateway(answer, family, carriedAway),
                'the gateway answers alike',
              );
            }),
            { numRuns: 3 },
          );
        });
      }
    }
  });
}
