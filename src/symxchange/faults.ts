/**
 * SOAP 1.1 Faults: how coregate answers a SymXchange call it refuses, and how it reads a core's. None of
 * the WSDLs declares a fault, so a refusal is the standard Fault: `faultcode` `soapenv:Client` when the
 * caller must change the request and `soapenv:Server` otherwise, `faultstring` saying what is wrong, and a
 * `detail` holding the problem in RFC 7807's XML form (namespace `urn:ietf:rfc:7807`) with coregate's
 * stable `code` and, for a request that is not valid, each property at fault.
 */
import type { ProblemBody } from '../contract/problems.js';
import { clip, escapeText, parseXml, type XmlElement } from './xml.js';

export const SOAP_ENVELOPE_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
/** RFC 7807, Appendix A: problem details as XML. */
export const PROBLEM_XML_NS = 'urn:ietf:rfc:7807';

/**
 * What a Fault (or a SymXchange error element) says, as read from a core or from coregate's own SOAP face.
 * Its structure decides what it means; its text is kept for the log, never for a caller.
 */
export interface Fault {
  /** The class of `faultcode`: one of SOAP 1.1's four (`Client.Authentication` is `Client`), else `Server`. */
  readonly faultCode: SoapFaultCode;
  /** The dotted refinement written after the class (`Authentication` of `Client.Authentication`), when it has one. */
  readonly refinement?: string;
  /** The SymXchange status code (`Status/StatusCode`, `BaseResponse@StatusCode`: an `xsd:int`), when it carries one. */
  readonly statusCode?: number;
  /** coregate's problem, when the detail holds one in RFC 7807's namespace (coregate's SOAP face). */
  readonly problem?: { readonly code?: string; readonly status?: number };
  /** What the core wrote: the fault string (or StatusMessage) and the detail's text, each clipped. Log only. */
  readonly text: { readonly faultString: string; readonly detail?: string };
}

/** A SOAP Fault answered by the other side of a call (its message names the structure, not the core's text). */
export class SoapFaultError extends Error {
  constructor(readonly fault: Fault) {
    super(`SOAP Fault ${fault.faultCode}${fault.statusCode === undefined ? '' : `, status ${fault.statusCode}`}`);
    this.name = 'SoapFaultError';
  }
}

const element = (name: string, text: string | number) => `<${name}>${escapeText(String(text))}</${name}>`;

/** SOAP 1.1's fault codes (4.4.1). */
export type SoapFaultCode = 'VersionMismatch' | 'MustUnderstand' | 'Client' | 'Server';

/**
 * How long a Fault's texts may be. Request-derived text is clipped where an error quotes it; this bounds
 * whatever reaches a Fault anyway (a detail quoting a 200 KB key), so that a Fault stays a few KB.
 */
const DETAIL_LENGTH = 1000;
const ITEM_LENGTH = 256;

/**
 * The Fault envelope of a problem: `soapenv:Client` for 4xx, `soapenv:Server` for 5xx, unless `faultCode`
 * says otherwise (MustUnderstand for a mandatory header coregate does not understand).
 * @example faultEnvelope({ type: 'urn:coregate:problem:record-not-found', title: 'No such record', status: 404, detail: 'No Collateral C1', code: 'RECORD_NOT_FOUND' })
 */
export function faultEnvelope(
  problem: ProblemBody,
  faultCode: SoapFaultCode = problem.status < 500 ? 'Client' : 'Server',
): string {
  const detail = clip(problem.detail, DETAIL_LENGTH);
  const errors = problem.errors
    ? `<errors>${problem.errors.map((e) => `<i>${element('pointer', clip(e.pointer, ITEM_LENGTH))}${element('detail', clip(e.detail, ITEM_LENGTH))}</i>`).join('')}</errors>`
    : '';
  const body =
    `<problem xmlns="${PROBLEM_XML_NS}">${element('type', problem.type)}${element('title', problem.title)}` +
    `${element('status', problem.status)}${element('detail', detail)}` +
    `${problem.instance === undefined ? '' : element('instance', clip(problem.instance, ITEM_LENGTH))}${element('code', problem.code)}${errors}</problem>`;
  return (
    `<soapenv:Envelope xmlns:soapenv="${SOAP_ENVELOPE_NS}"><soapenv:Body><soapenv:Fault>` +
    `${element('faultcode', `soapenv:${faultCode}`)}${element('faultstring', `${problem.title}: ${detail}`)}` +
    `<detail>${body}</detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>`
  );
}

const localName = (name: string) => name.slice(name.indexOf(':') + 1);
const prefixOf = (name: string) => (name.includes(':') ? name.slice(0, name.indexOf(':')) : '');
const childText = (parent: XmlElement, name: string) => parent.children.find((c) => localName(c.name) === name)?.text;

/** How much of a core's text is kept for the log. */
const TEXT_LENGTH = 1000;
const SOAP_FAULT_CODES: ReadonlySet<string> = new Set(['VersionMismatch', 'MustUnderstand', 'Client', 'Server']);
/** A fault code's refinement as it may be kept: dotted names (its length is bounded before it is tested). */
const REFINEMENT = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;
const REFINEMENT_LENGTH = 64;
/** coregate's problem codes (`RECORD_NOT_FOUND`): anything else in a problem's `code` is not one. */
const PROBLEM_CODE = /^[A-Z][A-Z_]{0,63}$/;

/** All character data of an element and its descendants, each element's on lines of its own. */
function allText(node: XmlElement): string {
  return [node.text.trim(), ...node.children.map(allText)].filter((text) => text !== '').join('\n');
}

/** An `xsd:int` (a SymXchange status code, a problem's status), or undefined for anything else. */
function xsdIntOf(text: string | undefined): number | undefined {
  const trimmed = text?.trim() ?? '';
  if (!/^[+-]?[0-9]{1,10}$/.test(trimmed)) return undefined;
  const code = Number(trimmed);
  return code >= -2147483648 && code <= 2147483647 ? code : undefined;
}

/**
 * The namespace of an element's prefix, as declared on it or on its `ancestors` (nearest first); the
 * detail's problem is coregate's only in RFC 7807's namespace.
 */
function namespaceOf(element: XmlElement, ancestors: readonly XmlElement[]): string | undefined {
  const prefix = prefixOf(element.name);
  for (const node of [element, ...ancestors]) {
    const uri = node.declarations?.get(prefix);
    if (uri !== undefined) return uri;
  }
  return undefined;
}

/**
 * The SymXchange status code below `node`: a `Status` element's `StatusCode` (the common schema's `Status`),
 * a `StatusCode` attribute (its `BaseResponse`), or a `StatusCode` element; the first found, depth first.
 */
function statusCodeWithin(node: XmlElement, depth = 0): number | undefined {
  if (depth > 8) return undefined;
  for (const child of node.children) {
    const local = localName(child.name);
    const attribute = Object.keys(child.attributes).find((name) => localName(name) === 'StatusCode');
    const code =
      local === 'Status'
        ? xsdIntOf(childText(child, 'StatusCode'))
        : local === 'StatusCode'
          ? xsdIntOf(child.text)
          : attribute
            ? xsdIntOf(child.attributes[attribute])
            : undefined;
    if (code !== undefined) return code;
    const below = statusCodeWithin(child, depth + 1);
    if (below !== undefined) return below;
  }
  return undefined;
}

/**
 * Reads a `Fault` element (its children are unqualified in SOAP 1.1). What it means is read off its
 * structure: the class of `faultcode`, a coregate problem in RFC 7807's namespace (its `code` and `status`),
 * or a SymXchange status code in the detail. Its texts are kept, clipped, for the log.
 * @example readFault(parseXml('<F><faultcode>S:Client</faultcode><faultstring>No</faultstring></F>')).faultCode // 'Client'
 */
export function readFault(fault: XmlElement): Fault {
  const written = localName((childText(fault, 'faultcode') ?? '').trim());
  // SOAP 1.1 refines a code with dots (`Client.Authentication`): its class is the first part.
  const [faultClass, ...refined] = written.split('.');
  const known = SOAP_FAULT_CODES.has(faultClass!);
  const faultCode = (known ? faultClass : 'Server') as SoapFaultCode;
  const refinement = refined.join('.');
  // A refinement is kept, for the gateway's fault rules to read, only of a class SOAP defines.
  const refines = known && refinement.length <= REFINEMENT_LENGTH && REFINEMENT.test(refinement) ? { refinement } : {};
  const faultString = clip((childText(fault, 'faultstring') ?? '').trim(), TEXT_LENGTH);
  const detail = fault.children.find((c) => localName(c.name) === 'detail');
  const detailText = detail ? clip(allText(detail).trim(), TEXT_LENGTH) : '';
  const text = { faultString, ...(detailText ? { detail: detailText } : {}) };
  const problemElement = detail?.children.find(
    (c) => localName(c.name) === 'problem' && namespaceOf(c, [detail, fault]) === PROBLEM_XML_NS,
  );
  if (problemElement) {
    const code = childText(problemElement, 'code')?.trim();
    const status = xsdIntOf(childText(problemElement, 'status'));
    return {
      faultCode,
      problem: {
        ...(code !== undefined && PROBLEM_CODE.test(code) ? { code } : {}),
        ...(status === undefined ? {} : { status }),
      },
      text,
    };
  }
  const statusCode = detail ? statusCodeWithin(detail) : undefined;
  return { faultCode, ...refines, ...(statusCode === undefined ? {} : { statusCode }), text };
}

/**
 * A SymXchange error element in an answer that is not a Fault, read as one: the `BaseResponse` form (a
 * `StatusCode` attribute and a `StatusMessage`) or a `Status` child (`StatusCode`, `Message`). A status
 * code of 0, or none, is no error; one that is not an `xsd:int` is an error without a code.
 * @example statusError(parseXml('<Response StatusCode="7"><StatusMessage>Account locked</StatusMessage></Response>'))
 *   // { faultCode: 'Server', statusCode: 7, text: { faultString: 'Account locked' } }
 */
export function statusError(response: XmlElement): Fault | undefined {
  const attribute = Object.keys(response.attributes).find((name) => localName(name) === 'StatusCode');
  const status = response.children.find((c) => localName(c.name) === 'Status');
  const written = (attribute ? response.attributes[attribute] : status && childText(status, 'StatusCode'))?.trim();
  if (written === undefined || written === '') return undefined;
  const statusCode = xsdIntOf(written);
  if (statusCode === 0) return undefined;
  const message = (attribute ? childText(response, 'StatusMessage') : status && childText(status, 'Message')) ?? '';
  return {
    faultCode: 'Server',
    ...(statusCode === undefined ? {} : { statusCode }),
    text: { faultString: clip(message.trim(), TEXT_LENGTH) },
  };
}

/**
 * The Fault of a whole envelope, or undefined when its body holds something else.
 * @example readFaultEnvelope(faultEnvelope(problem))?.problem?.code // 'RECORD_NOT_FOUND'
 */
export function readFaultEnvelope(xml: string): Fault | undefined {
  const root = parseXml(xml);
  const body = root.children.find((c) => localName(c.name) === 'Body');
  const fault = body?.children.find((c) => localName(c.name) === 'Fault');
  return fault ? readFault(fault) : undefined;
}
