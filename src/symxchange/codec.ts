/**
 * One generic codec between coregate's JSON shapes and SymXchange SOAP 1.1 envelopes (DESIGN, "The core
 * boundary and SymXchange"). It is driven by two descriptions only: each operation's TypeBox request and
 * response schemas (JSON names, types, nullability) and the SymXchange mapping (mapping.ts: element names
 * and their sequence order, attributes and their qualification, repeats, choices, namespaces). Nothing is
 * written per operation. Encoders and decoders are compiled once per operation and type, so a call walks
 * its value, not its schemas; an element path is built only when something fails.
 *
 * The few places where coregate's JSON and the wire differ by design are documented patterns applied
 * wherever the mapping shows them (docs/decisions.md, "SymXchange"):
 * - the request's `MessageId` attribute and `DeviceInformation` come from the caller, and `nxAttributes` is
 *   JSON only; request attributes the JSON does not carry (`BranchId`, `ProcessorUser`) are accepted and not
 *   passed on;
 * - a response's `MessageId` attribute echoes the request's, while the JSON's `MessageId` is the operation's
 *   name (spec);
 * - P2's `<Record>UpdatableFields` is the wire's `<Record>Fields`, and a top-level JSON property the
 *   request lacks that its `SearchFilter` holds travels there (the paged searches' `Query`);
 * - a value equal to its schema's `default` is an absent element, and an absent element its default
 *   (`FailedUpdateStatus`: null, [] or the empty failure, per family);
 * - findByLookup answers `Result` or `AccountNumber` (an `xsd:choice`); the JSON carries both;
 * - in a response, an element the XSD declares but the JSON does not carry, content of the `xsd:any` after
 *   `Version_1`, and an element or attribute the XSD does not declare (a newer core's) are skipped, the last
 *   noted (a core may answer more than coregate asks for); in a request each is refused;
 * - in a response, a list of records longer than the list maximum is cut to it, and says so in its
 *   `hasReachedMaximumListSize` where it has one (spec: lists stop at the maximum); a page longer than the page
 *   maximum is refused (cutting it would skip the records the next page does not repeat).
 * Any JSON property without an element is refused with SOAP_SCHEMA_VIOLATION, never dropped.
 *
 * This module is the codec's face; each construct is a module of codec/, as zeep keeps one per construct:
 * scalars.ts (XSD built-in types, their facets, text to value and back), layout.ts (a complex type's
 * elements, choices and attributes in order), encode.ts and decode.ts (the compiled element encoders and
 * decoders), answers.ts (a response's list bounds and notes), shapes.ts (each operation's request and
 * response as the wire shapes them), envelope.ts (the SOAP 1.1 envelope and its headers), with
 * namespaces.ts, json.ts and violations.ts beneath them.
 */
import type { TSchema } from 'typebox';
import type { SymxFacts } from '../catalog/symxchange/index.js';
import { readFault, SOAP_ENVELOPE_NS, SoapFaultError, statusError } from './faults.js';
import { jsonSchemas } from './json-schema.js';
import { createSymxMapping, type CodecOperation, type SymxMapping, type WireOperation } from './mapping.js';
import { clip, DEFAULT_XML_LIMITS, SoapCodecError, type XmlElement, type XmlLimits } from './xml.js';
import { answers, type AnswerLists, type AnswerNotes } from './codec/answers.js';
import { compileDecoders } from './codec/decode.js';
import { compileEncoders } from './codec/encode.js';
import { bodyElementOf, envelope, refuseMandatoryHeaders, wrapperChild } from './codec/envelope.js';
import { isObject, type JsonObject } from './codec/json.js';
import { compileLayouts } from './codec/layout.js';
import { compileShapes, type DeviceInformation, type Endpoint } from './codec/shapes.js';
import { violation, within } from './codec/violations.js';

export { SoapCodecError, DEFAULT_XML_LIMITS, type SoapCodecErrorCode, type XmlLimits } from './xml.js';
export type { CodecOperation, WireOperation } from './mapping.js';
export { SOAP_ENVELOPE_NS } from './faults.js';
export { SoapFaultError, type Fault } from './faults.js';
export type { AnswerLists, AnswerNotes } from './codec/answers.js';
export { XSI_NS } from './codec/namespaces.js';
export { plainDecimal } from './codec/scalars.js';
export type { DeviceInformation, Endpoint } from './codec/shapes.js';

export interface SymxCodecOptions {
  /** The operations the codec serves (logon/logoff have no SymXchange operation and are refused). */
  readonly operations: readonly CodecOperation[];
  /** Shared schemas the operations' `$ref`s name, by `$id`. */
  readonly schemas: readonly TSchema[];
  readonly limits?: Partial<XmlLimits>;
  /** How long a response's lists may be (gateway mode); unbounded without. */
  readonly answerLists?: AnswerLists;
  /** The release the codec speaks: 3.0 unless told. */
  readonly facts?: SymxFacts;
}

export interface DecodedRequest {
  readonly operation: CodecOperation;
  readonly wire: WireOperation;
  /** The JSON body, as the JSON API takes it. */
  readonly body: Record<string, unknown>;
  readonly messageId: string;
  readonly deviceInformation?: DeviceInformation;
}

export interface DecodedResponse {
  /** The JSON answer, as the JSON API gives it (its `MessageId` is the operation's name). */
  readonly result: Record<string, unknown>;
  /** The response's `MessageId` attribute: the request's, echoed. */
  readonly messageId: string | undefined;
  /** What was skipped or cut, when anything was. */
  readonly notes?: AnswerNotes;
}

export interface SymxCodec {
  readonly mapping: SymxMapping;
  encodeRequest(
    operation: CodecOperation,
    body: Readonly<Record<string, unknown>>,
    options: { readonly messageId: string; readonly deviceInformation?: DeviceInformation },
  ): string;
  /** A request sent to an endpoint: which of the endpoint's operations, and its JSON body. */
  decodeRequest(xml: string, endpoint: Endpoint): DecodedRequest;
  encodeResponse(operation: CodecOperation, result: Readonly<Record<string, unknown>>, messageId: string): string;
  /** A response envelope, as text or as the tree an `XmlStreamReader` read. */
  decodeResponse(operation: CodecOperation, xml: string | XmlElement): DecodedResponse;
}

/**
 * The codec for a set of operations and their shared schemas: layouts, encoders, decoders and shapes are
 * compiled once per type and operation, on first use, and reused by every call.
 * @example
 * const codec = createSymxCodec({ operations: OPERATIONS, schemas: SHARED_SCHEMAS });
 * codec.encodeRequest(findBySSN, { Credentials: { TokenCredentials: { TokenId: 't' } }, SSN: '123456789' }, { messageId: 'm1' });
 */
export function createSymxCodec(options: SymxCodecOptions): SymxCodec {
  const limits: XmlLimits = { ...DEFAULT_XML_LIMITS, ...options.limits };
  const mapping = createSymxMapping(options.operations, options.schemas, options.facts);
  const json = jsonSchemas(options.schemas);
  const layoutOf = compileLayouts(mapping);
  const responses = answers(options.answerLists);
  const elementEncoder = compileEncoders({ mapping, json, layoutOf });
  const valueDecoder = compileDecoders({ mapping, json, layoutOf, answers: responses });
  const { requestShapeOf, responseShapeOf, endpointOperation } = compileShapes({
    mapping,
    json,
    layoutOf,
    elementEncoder,
    valueDecoder,
  });

  return {
    mapping,

    encodeRequest(operation, body, { messageId, deviceInformation }) {
      const shape = requestShapeOf(operation);
      const xml = within(operation.name, () => shape.encode(shape.toWire(body, messageId, deviceInformation)));
      return envelope(mapping, shape.wire, operation.name, xml);
    },

    decodeRequest(xml, endpoint) {
      const { element, scope, uri, local, headers } = bodyElementOf(xml, limits);
      // SOAP 1.1 processes the headers before the body: a mandatory one refuses the call, whatever it asks.
      refuseMandatoryHeaders(headers);
      const operation =
        uri === mapping.service(endpoint.service).targetNamespace ? endpointOperation(endpoint, local) : undefined;
      if (!operation)
        throw new SoapCodecError(
          'SOAP_UNKNOWN_OPERATION',
          `this endpoint serves no operation ${clip(local)} in namespace ${uri ? clip(uri) : '(none)'}`,
        );
      const shape = requestShapeOf(operation);
      const decoded = within(local, () => {
        const { child, scope: childScope } = wrapperChild(element, scope, shape.wire.request.child.name);
        return within(child.name, () => shape.decode(child, childScope)) as JsonObject;
      });
      return { operation, wire: shape.wire, ...shape.fromWire(decoded) };
    },

    encodeResponse(operation, result, messageId) {
      const shape = responseShapeOf(operation);
      if (!isObject(result)) throw violation('a response is a JSON object', `${operation.name}Response`);
      const xml = within(`${operation.name}Response`, () => shape.encode(shape.toWire(result, messageId)));
      return envelope(mapping, shape.wire, `${operation.name}Response`, xml);
    },

    decodeResponse(operation, xml) {
      const shape = responseShapeOf(operation);
      const { element, scope, uri, local } = bodyElementOf(xml, limits);
      if (uri === SOAP_ENVELOPE_NS && local === 'Fault') throw new SoapFaultError(readFault(element));
      const expected = `${operation.name}Response`;
      if (uri !== mapping.service(shape.wire.service).targetNamespace || local !== expected)
        throw new SoapCodecError('SOAP_UNKNOWN_OPERATION', `expected ${expected}, got ${local}`);
      const { value: decoded, notes } = within(local, () => {
        const { child, scope: childScope } = wrapperChild(element, scope, shape.wire.response.child.name);
        const error = statusError(child);
        if (error) throw new SoapFaultError(error);
        return responses.noting(() => within(child.name, () => shape.decode(child, childScope)) as JsonObject);
      });
      return { ...shape.fromWire(decoded), ...(notes ? { notes } : {}) };
    },
  };
}
