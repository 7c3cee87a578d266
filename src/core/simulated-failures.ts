/**
 * What a failing core looks like, for the sandbox's fault rules (contract/fault-rules.ts). On the JSON API a
 * rule's failure is the problem the gateway answers when its core really fails that way: each is made by the
 * gateway's own functions (symxchange-core.ts) from the failure a real core causes (a refused connection, a
 * reset, a passed deadline, a Fault, an answer that is not SymXchange), so it cannot drift from the real one.
 * On the SOAP face coregate is the core, so it sends the failure itself; the broken answers it sends are here.
 */
import { SYMXCHANGE_DEFAULTS, type Config } from '../config.js';
import type { FaultOutcome, MalformedForm } from '../contract/fault-rules.js';
import type { Problem } from '../contract/problems.js';
import { forcedProblem, type SandboxFaultCode } from '../contract/sandbox-faults.js';
import type { AnyOperation } from '../operations/types.js';
import { SOAP_ENVELOPE_NS, SoapCodecError, type Fault } from '../symxchange/codec.js';
import type { SymxMapping } from '../symxchange/mapping.js';
import { parseXml } from '../symxchange/xml.js';
import {
  failureProblem,
  failureTiming,
  faultProblem,
  notAnEnvelope,
  notSymxchange,
  type FailureTiming,
} from './symxchange-core.js';
import { CoreFailure } from './transport.js';

/** An answer as the SOAP face sends it in place of the real one. */
export interface BrokenAnswer {
  readonly contentType: string;
  readonly body: string;
}

/** The page a proxy in front of a core answers in its place (a maintenance page, with 200). */
const NOT_XML: BrokenAnswer = {
  contentType: 'text/html; charset=utf-8',
  body: '<!DOCTYPE html><html><head><title>Maintenance</title></head><body><h1>Back soon</h1></body></html>',
};

/** A Fault as a SymXchange core sends it: its class, no status code, no coregate problem. */
const faultOfClass = (faultCode: Fault['faultCode']): Fault => ({ faultCode, text: { faultString: '' } });

/** A Fault carrying the problem a coregate acting as the core answers (what the gateway reads by its code). */
const coregateFault = (code: string, status: number): Fault => ({
  faultCode: status < 500 ? 'Client' : 'Server',
  problem: { code, status },
  text: { faultString: '' },
});

/** Problems a core's Fault makes: the Fault each comes from. */
const FROM_FAULTS: Partial<Record<SandboxFaultCode, Fault>> = {
  CORE_ERROR: faultOfClass('Server'),
  CORE_CREDENTIALS_REJECTED: coregateFault('FORBIDDEN', 403),
  RECORD_NOT_FOUND: coregateFault('RECORD_NOT_FOUND', 404),
  VALIDATION_FAILED: coregateFault('VALIDATION_FAILED', 400),
  INVALID_QUERY: coregateFault('INVALID_QUERY', 400),
  INVALID_PAGING_TOKEN: coregateFault('INVALID_PAGING_TOKEN', 400),
};

/** The exchanges that fail without a Fault: a core that refuses connections, one past its deadline, one answering a page. */
const unreachable = () => new CoreFailure('unavailable', 'the core is unreachable (ECONNREFUSED)', { sent: false });
const late = () => new CoreFailure('timeout', 'the core did not answer in time', { sent: true });
const reset = () => new CoreFailure('unavailable', 'the connection was reset', { sent: true, reset: true });
const FROM_FAILURES: Partial<Record<SandboxFaultCode, () => CoreFailure>> = {
  CORE_UNAVAILABLE: unreachable,
  CORE_TIMEOUT: late,
  CORE_BAD_RESPONSE: () => notAnEnvelope(200, NOT_XML.contentType),
};

/**
 * The failures of a core as the gateway's settings (or, in store mode, their defaults) make them.
 * @example simulatedFailures(config, codec.mapping).problem({ kind: 'drop' }, findBySSN, 'Forced by rule 1').code // 'CORE_UNAVAILABLE'
 */
export class SimulatedFailures {
  private readonly timing: FailureTiming;
  private readonly truncated = new Map<AnyOperation, string>();

  constructor(
    config: Pick<Config, 'symxchange'>,
    private readonly mapping: SymxMapping,
  ) {
    this.timing = failureTiming(config.symxchange ?? SYMXCHANGE_DEFAULTS);
  }

  /** The gateway's deadline for a call to its core: a longer delay on the JSON API ends in CORE_TIMEOUT at it. */
  get deadlineMs(): number {
    return this.timing.timeoutMs;
  }

  /**
   * The JSON API's answer to a failure: a core's failure as the gateway answers it; a problem no core causes
   * (RATE_LIMITED, UNAUTHENTICATED, …) as coregate sends it, with `detail` saying what forced it.
   */
  problem(outcome: FaultOutcome, operation: AnyOperation, detail: string): Problem {
    const writes = operation.writes === true;
    switch (outcome.kind) {
      case 'problem': {
        const fault = FROM_FAULTS[outcome.code];
        if (fault) return faultProblem(fault);
        const failure = FROM_FAILURES[outcome.code];
        if (failure) return failureProblem(failure(), writes, this.timing);
        return forcedProblem(outcome.code, outcome.status, detail);
      }
      case 'soapFault':
        return faultProblem(faultOfClass(outcome.faultClass));
      case 'drop':
        return failureProblem(reset(), writes, this.timing);
      case 'malformed':
        return outcome.form === 'not-xml'
          ? failureProblem(notAnEnvelope(200, NOT_XML.contentType), writes, this.timing)
          : this.unreadable(operation);
    }
  }

  /** The JSON API's answer when a delay passes the gateway's deadline (CORE_TIMEOUT). */
  timeout(operation: AnyOperation): Problem {
    return failureProblem(late(), operation.writes === true, this.timing);
  }

  /** What the SOAP face sends in place of an operation's answer: its envelope cut off, or a page that is not XML. */
  brokenAnswer(form: MalformedForm, operation: AnyOperation): BrokenAnswer {
    return form === 'not-xml' ? NOT_XML : { contentType: 'text/xml; charset=utf-8', body: this.truncatedOf(operation) };
  }

  /** The gateway's problem for the cut-off envelope: read as it reads a core's answer. */
  private unreadable(operation: AnyOperation): Problem {
    try {
      parseXml(this.truncatedOf(operation));
    } catch (error) {
      if (error instanceof SoapCodecError) return notSymxchange(error);
      throw error;
    }
    throw new Error('a cut-off envelope was read as XML');
  }

  /** The start of an operation's answer envelope, cut inside its first element. */
  private truncatedOf(operation: AnyOperation): string {
    let text = this.truncated.get(operation);
    if (text === undefined) {
      const namespace = this.mapping.carries(operation)
        ? this.mapping.service(this.mapping.wireOperation(operation).service).targetNamespace
        : 'urn:coregate';
      text =
        `<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="${SOAP_ENVELOPE_NS}"><soapenv:Body>` +
        `<ns:${operation.name}Response xmlns:ns="${namespace}"><Response MessageId="`;
      this.truncated.set(operation, text);
    }
    return text;
  }
}
