/**
 * SOAP 1.1 Faults: how coregate answers a SymXchange call it refuses, and how it reads a core's. None of
 * the WSDLs declares a fault, so a refusal is the standard Fault: `faultcode` `soapenv:Client` when the
 * caller must change the request and `soapenv:Server` otherwise, `faultstring` saying what is wrong, and a
 * `detail` holding the problem in RFC 7807's XML form (namespace `urn:ietf:rfc:7807`) with coregate's
 * stable `code` and, for a request that is not valid, each property at fault.
 */
import type { ProblemBody } from '../contract/problems.js';
import { escapeText, parseXml, type XmlElement } from './xml.js';

export const SOAP_ENVELOPE_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
/** RFC 7807, Appendix A: problem details as XML. */
export const PROBLEM_XML_NS = 'urn:ietf:rfc:7807';

/** What a Fault says, as read from a core (or from coregate's own SOAP face). */
export interface Fault {
  /** The local part of `faultcode`: `Client`, `Server`, or what the core wrote. */
  readonly faultCode: string;
  readonly faultString: string;
  /** The problem in the detail, when it carries one (coregate's SOAP face does). */
  readonly problem?: Partial<ProblemBody>;
  /** The detail's text otherwise (a core's own error text), at most 1,000 characters. */
  readonly detailText?: string;
  /** The core's own error code: a detail's `…Code` element, or an error element's `StatusCode`. */
  readonly coreCode?: string;
}

/** A SOAP Fault answered by the other side of a call. */
export class SoapFaultError extends Error {
  constructor(readonly fault: Fault) {
    super(`SOAP Fault ${fault.faultCode}: ${fault.faultString}`);
    this.name = 'SoapFaultError';
  }
}

const element = (name: string, text: string | number) => `<${name}>${escapeText(String(text))}</${name}>`;

/**
 * The Fault envelope of a problem: Client for 4xx, Server for 5xx.
 * @example faultEnvelope({ type: 'urn:coregate:problem:record-not-found', title: 'No such record', status: 404, detail: 'No Collateral C1', code: 'RECORD_NOT_FOUND' })
 */
export function faultEnvelope(problem: ProblemBody): string {
  const faultCode = problem.status < 500 ? 'soapenv:Client' : 'soapenv:Server';
  const errors = problem.errors
    ? `<errors>${problem.errors.map((e) => `<i>${element('pointer', e.pointer)}${element('detail', e.detail)}</i>`).join('')}</errors>`
    : '';
  const body =
    `<problem xmlns="${PROBLEM_XML_NS}">${element('type', problem.type)}${element('title', problem.title)}` +
    `${element('status', problem.status)}${element('detail', problem.detail)}` +
    `${problem.instance === undefined ? '' : element('instance', problem.instance)}${element('code', problem.code)}${errors}</problem>`;
  return (
    `<soapenv:Envelope xmlns:soapenv="${SOAP_ENVELOPE_NS}"><soapenv:Body><soapenv:Fault>` +
    `${element('faultcode', faultCode)}${element('faultstring', `${problem.title}: ${problem.detail}`)}` +
    `<detail>${body}</detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>`
  );
}

const localName = (name: string) => name.slice(name.indexOf(':') + 1);
const childText = (parent: XmlElement, name: string) => parent.children.find((c) => localName(c.name) === name)?.text;

/** All character data of an element and its descendants. */
function allText(node: XmlElement): string {
  return node.text + node.children.map(allText).join('');
}

/**
 * Reads a `Fault` element (its children are unqualified in SOAP 1.1; prefixes of the detail's own elements
 * are not resolved: a problem is recognised by its local names).
 */
export function readFault(fault: XmlElement): Fault {
  const faultCode = localName((childText(fault, 'faultcode') ?? '').trim()) || 'Server';
  const faultString = (childText(fault, 'faultstring') ?? '').trim();
  const detail = fault.children.find((c) => localName(c.name) === 'detail');
  const problemElement = detail?.children.find((c) => localName(c.name) === 'problem');
  if (problemElement) {
    const status = Number(childText(problemElement, 'status'));
    return {
      faultCode,
      faultString,
      problem: {
        code: childText(problemElement, 'code'),
        detail: childText(problemElement, 'detail'),
        ...(Number.isInteger(status) ? { status } : {}),
      },
    };
  }
  const text = detail ? allText(detail).trim().slice(0, 1000) : '';
  const coreCode = detail ? codeWithin(detail) : undefined;
  return { faultCode, faultString, ...(text ? { detailText: text } : {}), ...(coreCode ? { coreCode } : {}) };
}

/** The text of the first element below `node` named like a code (`ErrorCode`, `errorCode`, `StatusCode`, `code`). */
function codeWithin(node: XmlElement): string | undefined {
  for (const child of node.children) {
    if (/^(error|status|fault)?code$/i.test(localName(child.name)) && child.text.trim()) return child.text.trim();
    const below = codeWithin(child);
    if (below) return below;
  }
  return undefined;
}

/**
 * A SymXchange error element in an answer that is not a Fault, read as one: the `BaseResponse` form (a
 * `StatusCode` attribute and a `StatusMessage`) or a `Status` child (`StatusCode`, `Message`). A status
 * code of 0, or none, is no error.
 * @example statusError(parseXml('<Response StatusCode="7"><StatusMessage>Account locked</StatusMessage></Response>'))
 *   // { faultCode: 'Server', faultString: 'Account locked', coreCode: '7' }
 */
export function statusError(response: XmlElement): Fault | undefined {
  const attribute = Object.keys(response.attributes).find((name) => localName(name) === 'StatusCode');
  const status = response.children.find((c) => localName(c.name) === 'Status');
  const code = (attribute ? response.attributes[attribute] : status && childText(status, 'StatusCode'))?.trim();
  if (code === undefined || code === '' || Number(code) === 0) return undefined;
  const message =
    (attribute ? childText(response, 'StatusMessage') : status && childText(status, 'Message'))?.trim() ||
    `the core answered status ${code}`;
  return { faultCode: 'Server', faultString: message.slice(0, 1000), coreCode: code };
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
