/**
 * Operation shapes: how an operation's JSON request and response become the wire's top elements, where the
 * two differ by design (docs/decisions.md, "SymXchange"; the codec's module comment lists the patterns).
 * Each shape is built once per operation: a TypeBox or JSON schema of the wire's element as the JSON sees
 * it, its compiled encoder (encode.ts) and decoder (decode.ts), and the moves between the JSON and that
 * element's value (`toWire`, `fromWire`). The envelope around it is envelope.ts's.
 */
import { Type, type TSchema } from 'typebox';
import type { SymxServiceName } from '../../catalog/symxchange/index.js';
import { envelopeProperties } from '../../contract/envelope.js';
import type { JsonSchema, JsonSchemas } from '../json-schema.js';
import type { CodecOperation, Family, SymxMapping, WireOperation } from '../mapping.js';
import type { ContentDecoder, ValueDecoderOf } from './decode.js';
import type { ElementEncoder, ElementEncoderOf } from './encode.js';
import { isObject, type JsonObject } from './json.js';
import type { LayoutOf, TypeLayout } from './layout.js';

/** `DeviceInformation` of a request: two required attributes, filled by the gateway from its settings. */
export interface DeviceInformation {
  readonly DeviceType: string;
  readonly DeviceNumber: number;
}

/** A SOAP endpoint: a service on one of coregate's path families. */
export interface Endpoint {
  readonly service: SymxServiceName;
  readonly family: Family;
}

export interface RequestShape {
  readonly wire: WireOperation;
  readonly encode: ElementEncoder;
  readonly decode: ContentDecoder;
  toWire(body: Readonly<JsonObject>, messageId: string, device?: DeviceInformation): JsonObject;
  fromWire(decoded: JsonObject): { body: JsonObject; messageId: string; deviceInformation?: DeviceInformation };
}

export interface ResponseShape {
  readonly wire: WireOperation;
  readonly encode: ElementEncoder;
  readonly decode: ContentDecoder;
  toWire(result: Readonly<JsonObject>, messageId: string): JsonObject;
  fromWire(decoded: JsonObject): { readonly result: JsonObject; readonly messageId: string | undefined };
}

export interface Shapes {
  requestShapeOf(operation: CodecOperation): RequestShape;
  responseShapeOf(operation: CodecOperation): ResponseShape;
  /** The operation an endpoint serves under the request element's local name, if any. */
  endpointOperation(endpoint: Endpoint, local: string): CodecOperation | undefined;
}

/**
 * findByLookup's `Result` or `AccountNumber` (docs/decisions.md): a found lookup is sent as its Result (the
 * JSON's AccountNumber repeats Result's), and a core's bare AccountNumber becomes a Result naming only the
 * account (IdType NONE), as coregate answers for a lookup without a share.
 */
function lookupChoice(layout: TypeLayout) {
  const choice = layout.choices.find((group) => {
    const names = group.particles.map((p) => (p.kind === 'element' ? p.name : ''));
    return names.includes('Result') && names.includes('AccountNumber');
  });
  if (!choice) return undefined;
  return {
    toWire: (result: JsonObject): JsonObject =>
      isObject(result.Result) ? { ...result, AccountNumber: undefined } : { ...result, Result: undefined },
    fromWire: (result: JsonObject): JsonObject => {
      if (isObject(result.Result)) return { ...result, AccountNumber: result.Result.AccountNumber ?? null };
      if (typeof result.AccountNumber === 'string')
        return { ...result, Result: { AccountNumber: result.AccountNumber, IdType: 'NONE', Id: null } };
      return { ...result, Result: null, AccountNumber: null };
    },
  };
}

/**
 * The shapes of a mapping's operations, each built once per operation.
 * @example compileShapes({ mapping, json, layoutOf, elementEncoder, valueDecoder }).requestShapeOf(findBySSN).wire
 */
export function compileShapes(codec: {
  readonly mapping: SymxMapping;
  readonly json: JsonSchemas;
  readonly layoutOf: LayoutOf;
  readonly elementEncoder: ElementEncoderOf;
  readonly valueDecoder: ValueDecoderOf;
}): Shapes {
  const { mapping, json, layoutOf, elementEncoder, valueDecoder } = codec;
  const requestShapes = new Map<CodecOperation, RequestShape>();
  const responseShapes = new Map<CodecOperation, ResponseShape>();
  const endpointOperations = new Map<string, Map<string, CodecOperation>>();

  function requestShapeOf(operation: CodecOperation): RequestShape {
    const known = requestShapes.get(operation);
    if (known) return known;
    const wire = mapping.wireOperation(operation);
    const layout = layoutOf(wire.request.child.type);
    const elementNames = new Set(layout.slots.map((slot) => slot.element.name));
    const jsonProperties: Record<string, TSchema> = { ...envelopeProperties, ...operation.request };
    delete jsonProperties.nxAttributes;
    const wireProperties: Record<string, TSchema> = {};
    const renames = new Map<string, string>(); // JSON name → wire name
    const intoSearchFilter: string[] = [];
    const filterType = layout.slots.find((slot) => slot.element.name === 'SearchFilter')?.element.type;
    const filterHolds = (name: string) =>
      filterType !== undefined && layoutOf(filterType).slots.some((slot) => slot.element.name === name);
    // The JSON's fields to update travel in the release's update object, whatever its name.
    const updateObject = mapping.updateObject(operation);
    for (const [name, schema] of Object.entries(jsonProperties)) {
      if (updateObject?.json === name && updateObject.element !== name) {
        renames.set(name, updateObject.element);
        wireProperties[updateObject.element] = schema;
      } else if (!elementNames.has(name) && !('SearchFilter' in jsonProperties) && filterHolds(name)) {
        intoSearchFilter.push(name);
      } else wireProperties[name] = schema;
    }
    if (intoSearchFilter.length > 0)
      wireProperties.SearchFilter = Type.Optional(
        Type.Object(Object.fromEntries(intoSearchFilter.map((name) => [name, Type.Optional(jsonProperties[name]!)]))),
      );
    wireProperties.MessageId = Type.String();
    wireProperties.DeviceInformation = Type.Optional(
      Type.Object({ DeviceType: Type.String(), DeviceNumber: Type.Integer() }),
    );
    const schema = Type.Object(wireProperties) as unknown as JsonSchema;
    const fromWireName = new Map([...renames].map(([jsonName, wireName]) => [wireName, jsonName]));
    const shape: RequestShape = {
      wire,
      encode: elementEncoder({ ...wire.request.child, kind: 'element', nillable: false }, schema),
      decode: valueDecoder(wire.request.child.type, schema, false),
      toWire(body, messageId, device) {
        const out: JsonObject = { MessageId: messageId };
        for (const key in body) {
          const value = body[key];
          if (key === 'nxAttributes' || value === undefined) continue;
          if (intoSearchFilter.includes(key)) out.SearchFilter = { ...(out.SearchFilter as JsonObject), [key]: value };
          else out[renames.get(key) ?? key] = value;
        }
        if (device) out.DeviceInformation = { ...device };
        return out;
      },
      fromWire(decoded) {
        const { MessageId, DeviceInformation, SearchFilter } = decoded;
        const body: JsonObject = {};
        for (const key in decoded)
          if (key !== 'MessageId' && key !== 'DeviceInformation' && key !== 'SearchFilter')
            body[fromWireName.get(key) ?? key] = decoded[key];
        if (intoSearchFilter.length > 0) Object.assign(body, SearchFilter as JsonObject | undefined);
        else if (SearchFilter !== undefined) body.SearchFilter = SearchFilter;
        return {
          body,
          messageId: MessageId as string,
          ...(DeviceInformation === undefined ? {} : { deviceInformation: DeviceInformation as DeviceInformation }),
        };
      },
    };
    requestShapes.set(operation, shape);
    return shape;
  }

  function responseShapeOf(operation: CodecOperation): ResponseShape {
    const known = responseShapes.get(operation);
    if (known) return known;
    const wire = mapping.wireOperation(operation);
    const layout = layoutOf(wire.response.child.type);
    const jsonSchema = json.resolve(operation.response as JsonSchema);
    const jsonHasMessageId = jsonSchema.properties?.MessageId !== undefined;
    const wireHasMessageId = layout.attributes.some((a) => a.name === 'MessageId');
    const schema: JsonSchema = {
      ...jsonSchema,
      properties: { ...jsonSchema.properties, MessageId: { type: 'string' } },
      required: (jsonSchema.required ?? []).filter((name) => name !== 'MessageId'),
    };
    const choice = lookupChoice(layout);
    const shape: ResponseShape = {
      wire,
      encode: elementEncoder({ ...wire.response.child, kind: 'element', nillable: false }, schema),
      decode: valueDecoder(wire.response.child.type, schema, true),
      toWire(result, messageId) {
        const out = choice ? choice.toWire({ ...result }) : { ...result };
        out.MessageId = wireHasMessageId ? messageId : undefined;
        return out;
      },
      fromWire(decoded) {
        const { MessageId, ...rest } = decoded;
        const result = choice ? choice.fromWire(rest) : rest;
        if (jsonHasMessageId) result.MessageId = operation.name;
        return { result, messageId: MessageId as string | undefined };
      },
    };
    responseShapes.set(operation, shape);
    return shape;
  }

  function endpointOperation(endpoint: Endpoint, local: string): CodecOperation | undefined {
    const key = `${endpoint.service}|${endpoint.family}`;
    let byName = endpointOperations.get(key);
    if (!byName) {
      byName = new Map(
        mapping
          .endpoint(endpoint.service, endpoint.family)
          .map(({ operation, wire }) => [
            wire.request.element.slice(wire.request.element.lastIndexOf(':') + 1),
            operation,
          ]),
      );
      endpointOperations.set(key, byName);
    }
    return byName.get(local);
  }

  return { requestShapeOf, responseShapeOf, endpointOperation };
}
