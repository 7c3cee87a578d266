/**
 * Calling coregate's SymXchange face the way an integrator does: a node-soap client bound to the WSDL the
 * face serves. The JSON body of an operation becomes the client's arguments, and the client's answer
 * becomes JSON again, here in the test and independently of coregate's own codec: by the operation's JSON
 * response schema alone.
 */
import soap from 'soap';
import type { TSchema } from 'typebox';
import type { AnyOperation } from '../../src/operations/types.js';

/** The endpoint of an operation's family: `/SymXchange/<service>` (persistent), `/SymXchange/2022.01/<service>`. */
export function soapPath(operation: AnyOperation): string {
  return operation.family === 'P1' ? `/SymXchange/${operation.service}` : `/SymXchange/2022.01/${operation.service}`;
}

/** node-soap clients by endpoint path, each bound to `<base><path>?wsdl` and sending `headers`. */
export async function soapClients(
  base: string,
  operations: readonly AnyOperation[],
  headers: Readonly<Record<string, string>> = {},
): Promise<Map<string, soap.Client>> {
  const clients = new Map<string, soap.Client>();
  for (const path of new Set(operations.map(soapPath))) {
    const client = await soap.createClientAsync(`${base}${path}?wsdl`);
    for (const [name, value] of Object.entries(headers)) client.addHttpHeader(name, value);
    clients.set(path, client);
  }
  return clients;
}

/**
 * The client's arguments for a JSON body: the `Request` element with its MessageId attribute; P2's
 * `<Record>UpdatableFields` named as on the wire, a paged search's `Query` in its `SearchFilter`.
 */
export function soapArguments(operation: AnyOperation, body: Record<string, unknown>, messageId: string): unknown {
  const request: Record<string, unknown> = { attributes: { MessageId: messageId } };
  for (const [name, value] of Object.entries(body)) {
    if (name === 'nxAttributes') continue;
    if (name === 'Query' && /Paged/.test(operation.name)) request.SearchFilter = { Query: value };
    else request[name.replace(/UpdatableFields$/, 'Fields')] = value;
  }
  return { Request: request };
}

/** Calls an operation through its client; the answer is the client's object (wrapper element → value). */
export async function callSoap(
  clients: ReadonlyMap<string, soap.Client>,
  operation: AnyOperation,
  args: unknown,
): Promise<Record<string, unknown>> {
  const client = clients.get(soapPath(operation))! as unknown as Record<
    string,
    (args: unknown) => Promise<[Record<string, unknown>]>
  >;
  const [result] = await client[`${operation.name}Async`]!(args);
  return result;
}

interface Schema {
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
  readonly items?: Schema;
  readonly anyOf?: readonly Schema[];
  readonly format?: string;
  readonly default?: unknown;
}

/**
 * The JSON of a node-soap answer, by the operation's response schema: the wrapper element's value without
 * its attributes; numbers, booleans and dates as JSON has them; a single occurrence as an array where the
 * JSON has one; an absent property its default, [] or null. The JSON's MessageId is the operation name,
 * and findByLookup's AccountNumber is its Result's (docs/decisions.md).
 */
export function jsonOfSoapAnswer(
  operation: AnyOperation,
  answer: Record<string, unknown>,
  sharedSchemas: readonly TSchema[],
): Record<string, unknown> {
  const byId = new Map((sharedSchemas as readonly (Schema & { $id?: string })[]).map((s) => [s.$id, s]));
  const resolve = (schema: Schema): Schema => (schema.$ref ? resolve(byId.get(schema.$ref)!) : schema);
  const types = (schema: Schema): Schema[] => {
    const resolved = resolve(schema);
    if (resolved.anyOf) return resolved.anyOf.flatMap(types);
    if (Array.isArray(resolved.type)) return (resolved.type as string[]).map((type) => ({ ...resolved, type }));
    return [resolved];
  };
  const convert = (value: unknown, schema: Schema): unknown => {
    const alternatives = types(schema);
    const array = alternatives.find((alt) => alt.type === 'array');
    // An element that occurs is a list entry where the JSON has a list (FailedUpdateStatus's single object
    // is only ever "nothing failed", which the wire leaves out).
    if (array && value !== undefined && value !== null) {
      return (Array.isArray(value) ? value : [value]).map((item) => convert(item, array.items ?? {}));
    }
    if (value === null || value === undefined) return null;
    const object = alternatives.find((alt) => alt.type === 'object');
    if (object && typeof value === 'object' && !(value instanceof Date)) {
      const source = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(object.properties ?? {})) {
        if (source[name] !== undefined) out[name] = convert(source[name], property);
        else if (object.required?.includes(name)) {
          const resolved = resolve(property);
          out[name] =
            'default' in resolved ? resolved.default : types(property).some((t) => t.type === 'array') ? [] : null;
        }
      }
      return out;
    }
    if (value instanceof Date) return value.toISOString().slice(0, 10);
    if (alternatives.some((alt) => alt.type === 'integer' || alt.type === 'number')) return Number(value);
    if (alternatives.some((alt) => alt.type === 'boolean')) return value === true || value === 'true';
    return String(value);
  };
  const wrapped = Object.values(answer)[0] as Record<string, unknown>;
  const result = convert(wrapped, operation.response as Schema) as Record<string, unknown>;
  if ('MessageId' in result) result.MessageId = operation.name;
  if (operation.name === 'findByLookup') {
    const found = result.Result as { AccountNumber: string } | null;
    result.AccountNumber = found ? found.AccountNumber : null;
  }
  return result;
}

/**
 * JSON without null properties or empty lists: the wire says "no value", and "no entries" of a repeating
 * field, by leaving the element out.
 */
export function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, item]) => item !== null && !(Array.isArray(item) && item.length === 0))
      .map(([name, item]) => [name, withoutNulls(item)]),
  );
}
