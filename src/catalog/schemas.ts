/**
 * JSON schemas derived from the catalog: record shapes for responses and `<X>Fields` selectors for
 * requests. Shared schemas carry an `$id`, are registered once with Fastify and referenced by routes, so
 * the OpenAPI document names them as components.
 */
import { Type, type TSchema } from 'typebox';
import { type Family, type FieldDef, type FieldKind } from './fields.js';
import { filterBounds } from './filters.js';
import { RECORDS, SHARE_RECORD_NAMES, type RecordDef } from './records.js';
import { elementsOf, recordElements, type XsdElement } from './symxchange/index.js';

const recordDef = (name: string): RecordDef => RECORDS.find((r) => r.name === name)!;

const JSON_TYPE: Record<FieldKind, 'string' | 'integer' | 'number'> = {
  string: 'string',
  integer: 'integer',
  money: 'number',
  rate: 'number',
  date: 'string',
};

function scalarResponse(field: FieldDef): TSchema {
  const format = field.kind === 'date' ? { format: 'date' } : {};
  return Type.Unsafe({ type: [JSON_TYPE[field.kind], 'null'], ...format });
}

/** Response schema of one field: a nullable scalar, or the repeating entries `[{EntryId, <name>}]`. */
export function fieldResponseSchema(field: FieldDef): TSchema {
  if (!field.repeating) return scalarResponse(field);
  return Type.Array(
    Type.Object({ EntryId: Type.Integer(), [field.name]: scalarResponse(field) }, { additionalProperties: false }),
    { maxItems: field.repeating.maxEntries },
  );
}

/** Whether the spec's persistent update object of the record is named `<X>Fields` (the share records). */
const hasP1UpdateObject = (record: RecordDef) => (SHARE_RECORD_NAMES as readonly string[]).includes(record.name);

/**
 * Names of the shared schemas of a record, which are also the names of the properties that hold them, but
 * for `selectorId`.
 */
export const schemaIds = {
  record: (record: RecordDef) => record.name,
  /** The `<X>Fields` selector's property in `SelectableFields` (the wire's element name). */
  selector: (record: RecordDef) => `${record.name}Fields`,
  /**
   * The selector's shared schema: `<X>Fields` like its property, but `<X>FieldFlags` for the share records,
   * whose persistent update object is `<X>Fields` already (spec; SymXchange names both so, in two namespaces).
   */
  selectorId: (record: RecordDef) => (hasP1UpdateObject(record) ? `${record.name}FieldFlags` : `${record.name}Fields`),
  selectable: (record: RecordDef) => `${record.name}SelectableFields`,
  childrenFilter: (record: RecordDef) => `${record.name}ChildrenFilter`,
};

/** The child records of a record (Collateral → CollateralCollHold, …), from the catalog. */
export function childRecords(record: RecordDef): { list: string; record: RecordDef }[] {
  return record.children.map((child) => ({ list: child.list, record: recordDef(child.record) }));
}

/**
 * The record as returned: every field optional (field selection may leave it out) and nullable, and each
 * child list as `{hasReachedMaximumListSize, <Child>: [...]}` (spec: "Each child list is an object").
 * @example recordSchema(recordDef('CorpTransfer')).$id // 'CorpTransfer'
 */
export function recordSchema(record: RecordDef): TSchema {
  const properties: Record<string, TSchema> = Object.fromEntries(
    record.fields.filter((f) => !f.protection).map((f) => [f.name, Type.Optional(fieldResponseSchema(f))]),
  );
  for (const child of childRecords(record)) {
    properties[child.list] = Type.Optional(
      Type.Object(
        {
          hasReachedMaximumListSize: Type.Boolean(),
          [child.record.name]: Type.Array(Type.Ref(schemaIds.record(child.record))),
        },
        { additionalProperties: false },
      ),
    );
  }
  return Type.Object(properties, { $id: schemaIds.record(record), additionalProperties: false });
}

/**
 * The `<X>Fields` selector: one boolean flag per field. A repeating field also takes an array of
 * EntryIds to return only those entries (DESIGN: real clients send `"Memo": [1]`).
 */
export function selectorSchema(record: RecordDef): TSchema {
  const properties = Object.fromEntries(
    record.fields
      .filter((f) => !f.protection)
      .map((f) => [
        f.name,
        Type.Optional(
          f.repeating
            ? Type.Union([
                Type.Boolean(),
                Type.Array(Type.Integer({ minimum: 1 }), { maxItems: f.repeating.maxEntries }),
              ])
            : Type.Boolean(),
        ),
      ]),
  );
  return Type.Object(properties, {
    $id: schemaIds.selectorId(record),
    additionalProperties: false,
    description: `Per-field flags for ${record.name}: true selects the field.`,
  });
}

/**
 * `SelectableFields` for one record type: `IncludeAll<X>Fields`, `<X>Fields`, and one
 * `<Child>SelectableFields` per child record (spec: the document selector nests the tracking selector).
 */
export function selectableFieldsSchema(record: RecordDef): TSchema {
  return Type.Object(
    {
      [`IncludeAll${record.name}Fields`]: Type.Optional(Type.Boolean()),
      [schemaIds.selector(record)]: Type.Optional(Type.Ref(schemaIds.selectorId(record))),
      ...Object.fromEntries(
        childRecords(record).map((child) => [
          schemaIds.selectable(child.record),
          Type.Optional(Type.Ref(schemaIds.selectable(child.record))),
        ]),
      ),
    },
    { $id: schemaIds.selectable(record), additionalProperties: false },
  );
}

/** A search query: the language of src/query, at most 2,000 characters of printable text. */
export const QuerySchema = Type.String({
  maxLength: 2000,
  pattern: '^[^\\u0000-\\u001f\\u007f]*$',
  description: "e.g. Amount > 100 AND EffectiveDate >= {date:'2024-01-01'}",
});

/**
 * The date bounds a record's filters take besides `Query` (filters.ts: the core's StartPostDate and
 * EndPostDate of file-maintenance history), as optional filter properties.
 * @example filterBoundProperties(recordDef('CollateralFmHistory')) // { StartPostDate: …, EndPostDate: … }
 */
export function filterBoundProperties(record: RecordDef): Record<string, TSchema> {
  return Object.fromEntries(
    filterBounds(record).map((bound) => [
      bound.name,
      Type.Optional(
        Type.String({
          ...DATE_VALUE,
          description: `${bound.field.name} ${bound.bound === 'start' ? 'on or after' : 'on or before'} this date`,
        }),
      ),
    ]),
  );
}

/**
 * `<X>ChildrenFilter`: one `<Child>Filter` per child record, each with a `Query` (and the child's date
 * bounds) and, where the child has children of its own, a nested `<Child>ChildrenFilter` (spec:
 * ChildrenSearchFilter).
 */
export function childrenFilterSchema(record: RecordDef): TSchema {
  return Type.Object(
    Object.fromEntries(
      childRecords(record).map((child) => [
        `${child.record.name}Filter`,
        Type.Optional(
          Type.Object(
            {
              Query: Type.Optional(QuerySchema),
              ...filterBoundProperties(child.record),
              ...(child.record.children.length > 0
                ? {
                    [schemaIds.childrenFilter(child.record)]: Type.Optional(
                      Type.Ref(schemaIds.childrenFilter(child.record)),
                    ),
                  }
                : {}),
            },
            { additionalProperties: false },
          ),
        ),
      ]),
    ),
    { $id: schemaIds.childrenFilter(record), additionalProperties: false },
  );
}

/** Every shared schema a readable record type brings: shape, selector, SelectableFields, children filter. */
export function readableRecordSchemas(record: RecordDef): TSchema[] {
  return [
    recordSchema(record),
    selectorSchema(record),
    selectableFieldsSchema(record),
    ...(record.children.length > 0 ? [childrenFilterSchema(record)] : []),
  ];
}

/** Name of a share update's fields object: `<prefix>Fields` on P1, `<prefix>UpdatableFields` on P2 (spec). */
export function updatableFieldsName(record: RecordDef, family: Family): string {
  return family === 'P1' ? `${record.name}Fields` : `${record.name}UpdatableFields`;
}

function constraintText(field: FieldDef): string {
  const parts: string[] = [field.kind];
  if (field.maxLength !== undefined) parts.push(`at most ${field.maxLength} characters`);
  if (field.pattern) parts.push(`matching ${field.pattern}`);
  if (field.kind !== 'string' && field.kind !== 'date' && field.minimum !== undefined) {
    parts.push(`${field.minimum} to ${field.maximum}`);
  }
  if (field.readOnly) parts.push('read-only: reported as a failed update');
  return parts.join(', ');
}

/**
 * Text XML 1.0 can carry: no C0 control character but tab, line feed and carriage return (NUL and lone
 * surrogates are refused for every body by the JSON parser).
 */
export const XML_TEXT_PATTERN = '^[^\\u0001-\\u0008\\u000b\\u000c\\u000e-\\u001f\\ufffe\\uffff]*$';

/** YYYY-MM-DD of a real calendar day (the `date` format), year 0001 onwards: an `xsd:date`. */
const DATE_VALUE = { format: 'date', pattern: '^(?!0000)' };

/**
 * The JSON type of an update's value (DESIGN, Errors: "well-typed" is the JSON type the spec gives the
 * field, a date being a `YYYY-MM-DD` string): integer, number, date-shaped string, or text a message can
 * carry. Ranges, lengths and calendar days, the core's wire ranges among them, are field rules that the
 * update reports per field (spec, updateShare rule 2), so they are not in the schema.
 */
function updateValue(field: FieldDef, xsdType: string | undefined): Record<string, unknown> {
  switch (xsdType ?? field.kind) {
    case 'xsd:short':
    case 'xsd:int':
    case 'integer':
      return { type: 'integer' };
    case 'xsd:decimal':
    case 'money':
    case 'rate':
      return { type: 'number' };
    case 'xsd:date':
    case 'date':
      return { type: 'string', pattern: DATE_FORM };
    default:
      return { type: 'string', pattern: XML_TEXT_PATTERN };
  }
}

/** The form of a date, whether or not a calendar has the day (that is the field rule `INVALID_DATE`). */
export const DATE_FORM = '^[0-9]{4}-[0-9]{2}-[0-9]{2}$';

/** A request value: its wire type, or null where allowed. */
function requestValue(value: Record<string, unknown>, nullable: boolean): TSchema {
  if (!nullable) return Type.Unsafe(value);
  const { type, ...facets } = value;
  return Type.Unsafe({ ...facets, type: [type, 'null'] });
}

/** The XSD element of each field of a record the core declares (none for records of coregate's own). */
function xsdElementsByField(record: RecordDef): Map<string, XsdElement> {
  return new Map(recordElements(record.name).map((element) => [element.name, element]));
}

/**
 * The updatable-fields object of a record on one family. Each value must be of its field's JSON type
 * (text XML can carry), and null only where the core's element is nillable; a value of the right type that
 * breaks a field rule (its length, range, the core's wire range included, calendar day, read-only, number
 * of entries) is a per-field failure, not a 400 (spec, updateShare rule 2).
 */
export function updatableFieldsSchema(record: RecordDef, family: Family): TSchema {
  const elements = xsdElementsByField(record);
  const properties = Object.fromEntries(
    record.fields
      .filter((f) => f.families.includes(family))
      .map((f) => {
        const description = constraintText(f);
        const element = elements.get(f.name);
        if (!f.repeating) {
          const schema = requestValue(updateValue(f, element?.type), element?.nillable ?? true);
          return [f.name, Type.Optional(Type.Unsafe({ ...schema, description }))];
        }
        // An entry's elements are optional on the wire: a null value is an entry without one (removed).
        const entry = element ? elementsOf(element.type) : [];
        const entryType = (name: string) => entry.find((e) => e.name === name)?.type;
        const schema = Type.Array(
          Type.Object(
            {
              EntryId: Type.Unsafe({
                ...updateValue(f, entryType('EntryId') ?? 'xsd:short'),
                description: `1 to ${f.repeating.maxEntries}`,
              }),
              [f.name]: requestValue(updateValue(f, entryType(f.name)), true),
            },
            { additionalProperties: false },
          ),
          {
            description: `${description}; at most ${f.repeating.maxEntries} entries by EntryId, a null value removes the entry`,
          },
        );
        return [f.name, Type.Optional(schema)];
      }),
  );
  return Type.Object(properties, {
    $id: updatableFieldsName(record, family),
    additionalProperties: false,
    minProperties: 1,
    description: `Fields of ${record.name} to update (${family === 'P1' ? 'persistent' : '2022.01'} family).`,
  });
}
