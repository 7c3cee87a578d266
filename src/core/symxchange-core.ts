/**
 * Gateway mode: every operation answered by a Symitar core over SymXchange (DESIGN, "The core boundary and
 * SymXchange"). The path's Sym picks the core. A call is encoded with the shared mapping, sent with its
 * soapAction and the request id as its MessageId, and its answer decoded into exactly the JSON the store
 * answers (forwarding.ts). Failures are the gateway's problems, never a 500 and never a hang
 * (docs/decisions.md, "Gateway mode"): a fault is mapped by its structure, a Client fault then by the fault
 * rules (core-fault-rules.ts; docs/symxchange.md, "Errors and faults"), a call past its deadline is 504
 * CORE_TIMEOUT, a refused, reset or TLS-failed connection 503 CORE_UNAVAILABLE with Retry-After, anything
 * that is not SymXchange 502 CORE_BAD_RESPONSE. What the core wrote (a fault's text, a bad answer's
 * content) goes to the log under the request id, clipped, and never into a problem. An answer is parsed as it
 * arrives, bounded in size and in the length of its lists. A read is sent once more on a reset connection; a
 * write never is. A circuit breaker per core sheds calls while the core is down.
 */
import type { TSchema } from 'typebox';
import type { SymxchangeSettings } from '../config.js';
import { Problem, recordNotFound, type ProblemCode } from '../contract/problems.js';
import { ResponseMismatchError, responseChecker } from '../operations/response-check.js';
import type { AnyOperation } from '../operations/types.js';
import {
  createSymxCodec,
  SoapCodecError,
  SoapFaultError,
  type AnswerNotes,
  type Fault,
  type SymxCodec,
} from '../symxchange/codec.js';
import type { XmlElement } from '../symxchange/xml.js';
import type { SymxFacts } from '../catalog/symxchange/index.js';
import type { ExchangeRecorder } from '../recording/recorder.js';
import { traceCoreAnswer, traceCoreAttempt, traceCoreCall } from '../telemetry/tracing.js';
import { xmlAnswerReader } from './answer-reader.js';
import { assumedRelease, learnRelease, serviceAddress, SYMXCHANGE_SERVICES } from './core-release.js';
import { coreFaultRules, DEFAULT_CORE_FAULT_RULES, refusalProblem, type CoreFaultRules } from './core-fault-rules.js';
import { BrokenCircuitError, Circuit } from './circuit.js';
import type { Core, CoreCall, CoreLog } from './core.js';
import { DEADLINES, type Deadline } from './deadlines.js';
import { createForwarding, type CallCore } from './forwarding.js';
import {
  coreTransport,
  CoreFailure,
  type AnswerHead,
  type AnswerReader,
  type CoreAnswer,
  type CoreTransport,
} from './transport.js';

type JsonObject = Record<string, unknown>;

export type { CoreLog } from './core.js';

export interface SymxchangeCoreOptions {
  readonly settings: SymxchangeSettings;
  readonly operations: readonly AnyOperation[];
  readonly schemas: readonly TSchema[];
  /** The JSON API's list maximum: a core's longer list is cut to it. */
  readonly listMaximum: number;
  /** The JSON API's page maximum: a client's page size is capped to it before the call. */
  readonly pageMaximum: number;
  /** Told when a core's circuit opens or closes again, for the log. */
  readonly onCircuit?: (sym: number, state: 'open' | 'closed', url: URL) => void;
  /** The log of faults, bad answers, failures and cut lists. */
  readonly log?: CoreLog;
  /** The recording of every exchange (COREGATE_RECORD_DIR), when on. */
  readonly recorder?: ExchangeRecorder;
}

/** The problem of a core that cannot be reached now. */
function coreUnavailable(detail: string, retryAfterSeconds: number): Problem {
  return new Problem(503, 'CORE_UNAVAILABLE', detail, undefined, { 'retry-after': String(retryAfterSeconds) });
}

const UNSURE_WRITE = '; the update was sent and may have been applied: read the record before sending it again';
const UNSENT_WRITE = '; the update was never sent, so it was not applied';
/** The longest wait the gateway passes on from a core's Retry-After. */
const MAX_RETRY_AFTER_SECONDS = 3600;
/** The Retry-After of a fault or problem saying the core is unavailable for now. */
const FAULT_RETRY_AFTER_SECONDS = 5;

/**
 * The one reading of a Server fault's text (for any status code: none has a published meaning): saying the
 * core is unavailable for now, it is 503, so that the caller retries. A Server fault is never a 4xx.
 */
const UNAVAILABLE_TEXT = /\b(temporarily unavailable|try again later|currently unavailable|service unavailable)\b/i;

/** Problem codes of coregate's own SOAP face (a coregate as the core) passed on as they are: the caller's to fix. */
const CALLER_PROBLEMS: Readonly<Partial<Record<string, string>>> = {
  VALIDATION_FAILED: 'The core refused the request as not valid',
  INVALID_QUERY: 'The core refused the query',
  INVALID_PAGING_TOKEN: 'The core refused the paging token',
};

/** The problem of a fault, and the fault rule that made it when one did (its label). */
export interface FaultReading {
  readonly problem: Problem;
  readonly rule?: string;
}

/**
 * The problem of a fault (or a SymXchange error element); docs/symxchange.md, "Errors and faults", has the
 * table. By its structure first: a coregate acting as the core says what its problem is (its `code`, with
 * the status and the fault class agreeing). A SymXchange core gives its fault class and, at most, a status
 * code no public source gives a meaning to: a Client fault is the caller's to fix, and the first of `rules`
 * it matches (on its refined class, status code and words) says how; a Server fault never is, and is 503
 * when its words say the core is unavailable for now. Anything else is 502 CORE_ERROR carrying the class and
 * the code. The core's text never reaches the caller.
 * @example readFaultProblem({ faultCode: 'Client', text: { faultString: 'Invalid parameters', detail: 'Member not found' } }, DEFAULT_CORE_FAULT_RULES).problem.status // 404
 */
export function readFaultProblem(fault: Fault, rules: CoreFaultRules): FaultReading {
  const { faultCode, problem } = fault;
  if (problem?.code !== undefined) {
    const { code, status } = problem;
    const core = { faultcode: faultCode, code };
    const client = faultCode === 'Client';
    if (client && code === 'RECORD_NOT_FOUND' && status === 404)
      return { problem: recordNotFound('The core has no such record') };
    if (client && ((code === 'UNAUTHENTICATED' && status === 401) || (code === 'FORBIDDEN' && status === 403)))
      return { problem: refusalProblem('CORE_CREDENTIALS_REJECTED', core) };
    const callerProblem = CALLER_PROBLEMS[code];
    if (client && callerProblem && status === 400)
      return { problem: new Problem(400, code as ProblemCode, callerProblem) };
    if (!client && (code === 'CORE_UNAVAILABLE' || code === 'UNAVAILABLE') && status === 503)
      return { problem: coreUnavailable('The core is unavailable', FAULT_RETRY_AFTER_SECONDS) };
    return { problem: refusalProblem('CORE_ERROR', core) };
  }
  const core = { faultcode: faultCode, ...(fault.statusCode === undefined ? {} : { code: String(fault.statusCode) }) };
  const rule = rules.match(fault);
  if (rule) return { problem: refusalProblem(rule.problem, core), rule: rule.label };
  if (faultCode === 'Server' && UNAVAILABLE_TEXT.test(`${fault.text.faultString} ${fault.text.detail ?? ''}`))
    return { problem: coreUnavailable('The core says it is unavailable for now', FAULT_RETRY_AFTER_SECONDS) };
  return { problem: refusalProblem('CORE_ERROR', core) };
}

/**
 * The problem of a fault under the default fault rules.
 * @example faultProblem({ faultCode: 'Server', statusCode: 13033, text: { faultString: 'NSF' } }).status // 502
 */
export function faultProblem(fault: Fault): Problem {
  return readFaultProblem(fault, DEFAULT_CORE_FAULT_RULES).problem;
}

/** How much of a core's text one log entry keeps. */
const LOGGED_TEXT = 500;

/**
 * A core's text as the log keeps it: clipped, and runs of nine or more digits masked (a core may quote an
 * SSN, a card or an account number in an error).
 * @example loggable('SSN 123456789 not found') // 'SSN [digits] not found'
 */
export function loggable(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const clipped = text.length > LOGGED_TEXT ? `${text.slice(0, LOGGED_TEXT)}…` : text;
  return clipped.replace(/\d(?:[\s-]?\d){8,}/g, '[digits]');
}

/** A media type as a problem may name it (the core's Content-Type is its text: only a plain type is quoted). */
function mediaType(contentType: string): string {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === '') return 'no content type';
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/.test(type)
    ? type
    : 'another content type';
}

/**
 * The failure of an answer that is not a SOAP envelope (another status, or not XML).
 * @example notAnEnvelope(200, 'text/html').message // 'the core answered HTTP 200 with text/html, not a SOAP envelope'
 */
export function notAnEnvelope(status: number, contentType: string): CoreFailure {
  return new CoreFailure(
    'bad-response',
    `the core answered HTTP ${status} with ${mediaType(contentType)}, not a SOAP envelope`,
    { sent: true },
  );
}

/** The element path of a codec error as a problem may name it: XML names only (the XSD's, mostly). */
const ELEMENT_PATH = /^[A-Za-z_][A-Za-z0-9_.:@/[\]-]{0,299}$/;

/** 502 for an answer the codec refused: its stable code and the element at fault, not what the core wrote. */
export function notSymxchange(error: SoapCodecError): Problem {
  const at = error.path !== undefined && ELEMENT_PATH.test(error.path) ? ` at ${error.path}` : '';
  return new Problem(502, 'CORE_BAD_RESPONSE', `The core's answer is not what SymXchange says (${error.code}${at})`);
}

/** What the problems of a failed exchange say of time: the call's deadline, and the wait while a circuit is open. */
export interface FailureTiming {
  readonly timeoutMs: number;
  /** Retry-After of an unavailable core that gave none of its own. */
  readonly retryAfterSeconds: number;
}

/** The timing of a gateway's settings. */
export function failureTiming(settings: Pick<SymxchangeSettings, 'timeoutMs' | 'breakerOpenMs'>): FailureTiming {
  return { timeoutMs: settings.timeoutMs, retryAfterSeconds: Math.max(1, Math.ceil(settings.breakerOpenMs / 1000)) };
}

/**
 * The problem of an exchange that failed (`CoreFailure`: unavailable, timeout, bad response). A write says
 * what became of it: one never written to a connection was not applied; any other may have been.
 * @example failureProblem(new CoreFailure('unavailable', 'the core is unreachable (ECONNREFUSED)'), false, timing).status // 503
 */
export function failureProblem(error: CoreFailure, writes: boolean, timing: FailureTiming): Problem {
  const problem = exchangeProblem(error, timing);
  if (!writes) return problem;
  return error.sent ? unsureWrite(problem) : unsentWrite(problem);
}

/** The problem of a failed exchange, whatever the call was. */
function exchangeProblem(error: CoreFailure, timing: FailureTiming): Problem {
  if (error.kind === 'timeout')
    return new Problem(504, 'CORE_TIMEOUT', `The core did not answer within ${timing.timeoutMs} ms`);
  if (error.kind === 'bad-response')
    return new Problem(502, 'CORE_BAD_RESPONSE', `${error.message[0]!.toUpperCase()}${error.message.slice(1)}`);
  const retryAfter = Math.min(Number(error.retryAfter) || timing.retryAfterSeconds, MAX_RETRY_AFTER_SECONDS);
  return coreUnavailable(`The core is unavailable: ${error.message}`, Math.max(1, Math.ceil(retryAfter)));
}

/** A write's problem when none of its request left: it was not applied, and may be sent again as it is. */
function unsentWrite(problem: Problem): Problem {
  return new Problem(problem.status, problem.code, `${problem.detail}${UNSENT_WRITE}`, problem.errors, problem.headers);
}

/**
 * A write's problem once its request may have left (written in part or whole, answered by anything but the
 * core's own refusal): the core may have applied it. It names no Retry-After, since sending the update again
 * could apply it twice; a retry with its Idempotency-Key is told the same again.
 */
export function unsureWrite(problem: Problem): Problem {
  if (UNSURE_WRITES.has(problem)) return problem;
  const unsure = new Problem(
    problem.status,
    problem.code,
    `${problem.detail}${UNSURE_WRITE}`,
    problem.errors,
    {},
    problem.core,
  );
  UNSURE_WRITES.add(unsure);
  return unsure;
}

/** The problems of writes that may have reached the core and were not answered as applied or refused. */
const UNSURE_WRITES = new WeakSet<Problem>();

/**
 * Whether an error of a write's core call leaves its outcome unknown: some of the update may have left, and
 * no answer said it was applied or refused, so it may have been applied. Sending it again could apply it twice.
 */
export function mayHaveBeenApplied(error: unknown): boolean {
  return error instanceof Problem && UNSURE_WRITES.has(error);
}

/** How the gateway speaks one SymXchange release: its codec, and the forwarding of operations onto it. */
interface Dialect {
  readonly facts: SymxFacts;
  readonly codec: SymxCodec;
  readonly forwarding: ReturnType<typeof createForwarding>;
}

/** One core: its address, transport and circuit breaker, and the release it speaks (learned at start). */
interface SymCore {
  readonly sym: number;
  readonly url: URL;
  readonly transport: CoreTransport;
  readonly breaker: Circuit;
  dialect: Dialect;
}

/** The services a core answers over SymXchange; the others' operations (logon, logoff) are the store's alone. */
const SYMXCHANGE_SERVICE_NAMES: ReadonlySet<string> = new Set(SYMXCHANGE_SERVICES);

/** One call of an operation: what the log names it by, and its deadline. */
interface CallContext {
  readonly core: SymCore;
  readonly requestId: string;
  /** Passes when COREGATE_SYMXCHANGE_TIMEOUT_MS has passed since the gateway started answering. */
  readonly deadline: Deadline;
  /** The fault rule that made the call's problem of a core's fault, for the audit trail. */
  faultRule?: string;
  readonly traceContext?: CoreCall['traceContext'];
}

/** SymXchange's repeating fields hold at most 100 entries (the facts' largest numeric maxOccurs). */
const MAX_FIELD_ENTRIES = 100;
/** Distinct unknown elements the log names, once each. */
const LOGGED_UNKNOWN = 200;

/**
 * The gateway's core; throws at start for a setting that cannot work (an unreadable certificate).
 * @example const core = symxchangeCore({ settings: config.symxchange!, operations: OPERATIONS, schemas: SHARED_SCHEMAS, listMaximum: 1000, pageMaximum: 1000 });
 */
export function symxchangeCore(options: SymxchangeCoreOptions): Core {
  const { settings, listMaximum, log } = options;
  // A page may hold one more record than the list maximum: the gateway asks for that many to learn if more follow.
  const pageMaximum = Math.max(options.pageMaximum, listMaximum + 1);
  /** One dialect per release, shared by the Syms that speak it. */
  const dialects = new Map<SymxFacts, Dialect>();
  function dialectOf(facts: SymxFacts): Dialect {
    let dialect = dialects.get(facts);
    if (!dialect) {
      const codec = createSymxCodec({
        operations: options.operations,
        schemas: options.schemas,
        answerLists: { listMaximum, pageMaximum },
        facts,
      });
      const forwarding = createForwarding(options.operations, codec.mapping, {
        listMaximum,
        pageMaximum: options.pageMaximum,
      });
      dialects.set(facts, (dialect = { facts, codec, forwarding }));
    }
    return dialect;
  }
  // The answer's size is capped as it streams, and the elements kept of it (a list's past the cap are not):
  // a 1,000-record page of 131 fields keeps 131,000; the cap bounds the tree of an answer of no such shape.
  const xmlLimits = {
    maxLength: settings.maxAnswerBytes,
    maxDepth: 32,
    maxElements: Math.max(500_000, Math.ceil(settings.maxAnswerBytes / 16)),
    maxNameLength: 1024,
  };
  const maxRepeats = Math.max(pageMaximum, MAX_FIELD_ENTRIES) + 1;
  // The core is outside the gateway's trust: every answer is checked against the operation's contract.
  const checkAnswer = responseChecker(options.schemas);
  const device = { DeviceType: settings.deviceType, DeviceNumber: settings.deviceNumber };
  const timing = failureTiming(settings);
  const unknownLogged = new Set<string>();
  // Read at start: a rules file that cannot work stops it (COREGATE_SYMXCHANGE_FAULT_RULES).
  const faultRules = coreFaultRules(settings.faultRulesFile);

  const cores = new Map<number, SymCore>();
  for (const [sym, url] of settings.urls) {
    const breaker = new Circuit({
      failures: settings.breakerFailures,
      halfOpenAfterMs: settings.breakerOpenMs,
      // A core that cannot be reached or does not answer counts; a fault or a bad answer is an answer.
      counts: (error) => error instanceof CoreFailure && error.kind !== 'bad-response',
      onChange: (state) => {
        if (state === 'open' || state === 'closed') options.onCircuit?.(sym, state, url);
      },
    });
    const facts = assumedRelease(url, settings.release);
    cores.set(sym, { sym, url, transport: coreTransport(url, settings), breaker, dialect: dialectOf(facts) });
  }

  /**
   * How an answer is read, by its head: a gateway status (502, 503, 504) is the core being unavailable (and
   * counts toward opening the circuit, like a refused connection); anything but a 200 or 500 of XML is not
   * SymXchange; a SOAP answer is parsed as it arrives.
   */
  function readAnswer(head: AnswerHead): AnswerReader<XmlElement> {
    const { status } = head;
    if (status === 502 || status === 503 || status === 504)
      throw new CoreFailure('unavailable', `the core answered HTTP ${status}`, {
        // Whatever answered (the core, or a proxy in front of it that may have forwarded the request before
        // failing) had the request: a write may have been applied.
        sent: true,
        ...(head.retryAfter ? { retryAfter: head.retryAfter } : {}),
      });
    const isXml = /^\s*(text|application)\/(soap\+)?xml\b/i.test(head.contentType);
    if ((status !== 200 && status !== 500) || !isXml) throw notAnEnvelope(status, head.contentType);
    return xmlAnswerReader(xmlLimits, maxRepeats);
  }

  const { recorder } = options;

  /** One exchange under the core's breaker, within the call's deadline. */
  function exchange(call: CallContext, path: string, soapAction: string, xml: string) {
    return call.core.breaker.execute(() =>
      call.core.transport.post(path, soapAction, xml, {
        deadline: call.deadline,
        read: recorder ? recorder.tapRead(readAnswer) : readAnswer,
        traceContext: call.traceContext,
      }),
    );
  }

  /** The facts every log entry of a call names. */
  const logged = (call: CallContext, operation: AnyOperation) => ({
    reqId: call.requestId,
    sym: call.core.sym,
    operation: `${operation.family}:${operation.name}`,
  });

  /** The problem of a failed exchange, logged with what lies under it. */
  function failedExchange(call: CallContext, operation: AnyOperation, error: unknown): Problem {
    if (error instanceof BrokenCircuitError) {
      const held = coreUnavailable(
        `The core of Sym ${call.core.sym} is failing; calls are held back for a while`,
        timing.retryAfterSeconds,
      );
      return operation.writes ? unsentWrite(held) : held;
    }
    if (error instanceof SoapCodecError) {
      log?.warn({ ...logged(call, operation), error: loggable(error.message) }, "the core's answer is not SymXchange");
      // An answer came, and it is not one the gateway reads: a write may have been applied.
      return operation.writes ? unsureWrite(notSymxchange(error)) : notSymxchange(error);
    }
    if (!(error instanceof CoreFailure)) throw error;
    const cause = error.cause as { message?: string; code?: string } | undefined;
    log?.warn(
      { ...logged(call, operation), failure: error.message, cause: loggable(cause?.message), code: cause?.code },
      'the call to the core failed',
    );
    return failureProblem(error, operation.writes === true, timing);
  }

  /** The JSON answer of one operation at one core; throws the gateway's problem otherwise. */
  async function callOperation(call: CallContext, operation: AnyOperation, body: JsonObject) {
    if (call.deadline.expired)
      throw new Problem(
        504,
        'CORE_TIMEOUT',
        `The core did not answer within ${settings.timeoutMs} ms${operation.writes ? UNSENT_WRITE : ''}`,
      );
    const { codec } = call.core.dialect;
    const wire = codec.mapping.wireOperation(operation);
    const xml = codec.encodeRequest(operation, body, { messageId: call.requestId, deviceInformation: device });
    const path = serviceAddress(call.core.url, wire.service);
    let answer: CoreAnswer<XmlElement>;
    try {
      answer = await exchange(call, path, wire.soapAction, xml);
    } catch (error) {
      // A read whose connection was reset under it is sent once more; a write never is.
      if (operation.writes || !(error instanceof CoreFailure) || !error.reset || call.deadline.expired)
        throw failedExchange(call, operation, error);
      traceCoreAttempt(2);
      try {
        answer = await exchange(call, path, wire.soapAction, xml);
      } catch (again) {
        throw failedExchange(call, operation, again);
      }
    }
    traceCoreAnswer(answer.status);
    try {
      const decoded = codec.decodeResponse(operation, answer.body);
      if (decoded.notes) noted(call, operation, decoded.notes);
      return decoded.result;
    } catch (error) {
      if (error instanceof SoapFaultError) {
        const { faultCode, statusCode, problem, text } = error.fault;
        const reading = readFaultProblem(error.fault, faultRules);
        call.faultRule = reading.rule;
        log?.warn(
          {
            ...logged(call, operation),
            core: {
              status: answer.status,
              faultcode: faultCode,
              code: statusCode ?? problem?.code,
              faultstring: loggable(text.faultString),
              detail: loggable(text.detail),
            },
            ...(reading.rule === undefined ? {} : { faultRule: reading.rule }),
          },
          'the core refused the call',
        );
        // A Client fault is the core refusing the request: a write was not applied. Any other fault (a
        // Server fault, or an error element) may come after some of it was: its outcome is unknown.
        const refusal = reading.problem;
        throw operation.writes && error.fault.faultCode !== 'Client' ? unsureWrite(refusal) : refusal;
      }
      if (error instanceof SoapCodecError) throw failedExchange(call, operation, error);
      throw error;
    }
  }

  /** What a recording names an exchange by. */
  function recordedAs(core: SymCore, operation: AnyOperation) {
    const { facts, codec } = core.dialect;
    const wire = codec.mapping.wireOperation(operation);
    const { family, name } = operation;
    return { release: facts.release.release, service: wire.service, operation: wire.name, family, name };
  }

  /** Logs what decoding an answer skipped (each unknown element once) or cut. */
  function noted(call: CallContext, operation: AnyOperation, notes: AnswerNotes): void {
    const unknown = notes.unknown.filter((name) => !unknownLogged.has(name));
    if (unknown.length > 0 && unknownLogged.size < LOGGED_UNKNOWN) {
      for (const name of unknown) unknownLogged.add(name);
      log?.warn(
        { ...logged(call, operation), unknown },
        'the core answered elements the XSD does not declare: skipped (a newer core?)',
      );
    }
    if (notes.cut.length > 0)
      log?.warn(
        { ...logged(call, operation), cut: notes.cut, listMaximum },
        'the core answered a list longer than the list maximum: cut to it',
      );
  }

  return {
    kind: 'symxchange',
    syms: [...cores.keys()],
    verifiesCredentials: true,
    async answer(operation, _context, body, coreCall: CoreCall) {
      if (!SYMXCHANGE_SERVICE_NAMES.has(operation.service))
        throw new Problem(
          501,
          'STORE_ONLY',
          `${operation.name} is coregate's own session management: in gateway mode log on at the core and send its TokenId in TokenCredentials`,
        );
      const core = cores.get(coreCall.sym);
      if (!core) throw new Problem(404, 'NOT_FOUND', `No core is configured for Sym ${coreCall.sym}`);
      const { codec, forwarding, facts } = core.dialect;
      if (!codec.mapping.carries(operation))
        throw new Problem(
          501,
          'CORE_OPERATION_UNSUPPORTED',
          `The core of Sym ${core.sym} speaks SymXchange ${facts.release.release}, which has no ${operation.name}`,
        );
      const started = performance.now();
      let outcome = 'ok';
      // One deadline for every exchange an operation takes and the reading of their answers.
      const call: CallContext = {
        core,
        requestId: coreCall.requestId,
        deadline: DEADLINES.start(settings.timeoutMs),
        traceContext: coreCall.traceContext,
      };
      // Each SOAP call is a CLIENT span of the request's, its traceparent sent to the core (docs/tracing.md).
      const callCore: CallCore = (op, request) =>
        traceCoreCall(
          () => {
            const wire = codec.mapping.wireOperation(op);
            const facts = { service: wire.service, operation: wire.name, soapAction: wire.soapAction };
            return { ...facts, sym: core.sym, url: core.transport.url };
          },
          () =>
            recorder
              ? recorder.exchange(
                  () => recordedAs(core, op),
                  request,
                  () => callOperation(call, op, request),
                )
              : callOperation(call, op, request),
        );
      try {
        const result = await forwarding.answer(operation, body as JsonObject, callCore);
        // A read answered after its deadline is late however it got there; a write that was answered is answered.
        if (call.deadline.expired && !operation.writes)
          throw new Problem(504, 'CORE_TIMEOUT', `The core did not answer within ${settings.timeoutMs} ms`);
        try {
          checkAnswer(operation, result);
        } catch (error) {
          if (error instanceof ResponseMismatchError) {
            const broken = new Problem(
              502,
              'CORE_BAD_RESPONSE',
              `The core's answer breaks the contract: ${error.message}`,
            );
            throw operation.writes ? unsureWrite(broken) : broken;
          }
          throw error;
        }
        return result;
      } catch (error) {
        outcome = error instanceof Problem ? error.code : 'INTERNAL';
        throw error;
      } finally {
        call.deadline.release();
        coreCall.outcome = {
          latencyMs: Math.round(performance.now() - started),
          outcome,
          ...(outcome !== 'ok' && call.faultRule !== undefined ? { faultRule: call.faultRule } : {}),
        };
      }
    },
    async start() {
      await Promise.all(
        [...cores.values()].map(async (core) => {
          const learned = await learnRelease(core, settings, options.operations, log);
          if (learned) core.dialect = dialectOf(learned);
        }),
      );
    },
    readiness() {
      const states = [...cores.values()].map((core) => ({
        sym: core.sym,
        state: core.breaker.state,
        release: core.dialect.facts.release.release,
      }));
      return {
        ready: states.some((s) => s.state !== 'open'),
        detail: states.map((s) => `${s.sym}: ${s.state.replace('_', ' ')}, SymXchange ${s.release}`).join('; '),
      };
    },
    circuits() {
      return new Map([...cores.values()].map((core) => [core.sym, core.breaker.state]));
    },
    recording: recorder && (() => recorder.counts()),
    async close() {
      await Promise.all([...cores.values()].map((core) => core.transport.close()));
      await recorder?.close();
    },
  };
}
