/**
 * Gateway mode: every operation answered by a Symitar core over SymXchange (DESIGN, "The core boundary and
 * SymXchange"). The path's Sym picks the core. A call is encoded with the shared mapping, sent with its
 * soapAction and the request id as its MessageId, and its answer decoded into exactly the JSON the store
 * answers (forwarding.ts). Failures are the gateway's problems, never a 500 and never a hang
 * (docs/decisions.md, "Gateway mode"): a fault is mapped by what it says, a timeout is 504 CORE_TIMEOUT, a
 * refused, reset or TLS-failed connection 503 CORE_UNAVAILABLE with Retry-After, anything that is not
 * SymXchange 502 CORE_BAD_RESPONSE. A read is sent once more on a reset connection; a write never is. A
 * circuit breaker per core sheds calls while the core is down.
 */
import { BrokenCircuitError, circuitBreaker, CircuitState, ConsecutiveBreaker, handleWhen } from 'cockatiel';
import type { TSchema } from 'typebox';
import type { SymxchangeSettings } from '../config.js';
import { Problem, recordNotFound, type ProblemCode } from '../contract/problems.js';
import { ResponseMismatchError, responseChecker } from '../operations/response-check.js';
import type { AnyOperation } from '../operations/types.js';
import { createSymxCodec, SoapCodecError, SoapFaultError, type Fault, type SymxCodec } from '../symxchange/codec.js';
import { symxchangeService } from '../catalog/symxchange/index.js';
import type { CircuitState as CoreCircuitState, Core, CoreCall } from './core.js';
import { createForwarding, type CallCore } from './forwarding.js';
import { coreTransport, CoreFailure, failureOf, type CoreAnswer, type CoreTransport } from './transport.js';

type JsonObject = Record<string, unknown>;

/** Answers from a core are larger than requests: a page of tracking records, a record with its child lists. */
const CORE_XML_LIMITS = { maxLength: 32 * 1024 * 1024, maxDepth: 32, maxElements: 2_000_000 };

export interface SymxchangeCoreOptions {
  readonly settings: SymxchangeSettings;
  readonly operations: readonly AnyOperation[];
  readonly schemas: readonly TSchema[];
  readonly listMaximum: number;
  /** Told when a core's circuit opens or closes again, for the log. */
  readonly onCircuit?: (sym: number, state: 'open' | 'closed', url: URL) => void;
}

/** The problem of a core that cannot be reached now. */
function coreUnavailable(detail: string, retryAfterSeconds: number): Problem {
  return new Problem(503, 'CORE_UNAVAILABLE', detail, undefined, { 'retry-after': String(retryAfterSeconds) });
}

const UNSURE_WRITE = '; the update was sent and may have been applied: read the record before sending it again';

/** Words of a core's own fault text that say which kind of refusal it is (a core's fault carries no coregate code). */
const NOT_FOUND_TEXT = /not found|no such|does not exist|no record/i;
const CREDENTIALS_TEXT = /credential|password|authenticat|unauthori[sz]ed|not authori[sz]ed|access denied|token/i;

/** Problem codes of coregate's own SOAP face (an upstream coregate) passed on as they are: the caller's to fix. */
const CALLER_PROBLEMS: ReadonlySet<string> = new Set(['VALIDATION_FAILED', 'INVALID_QUERY', 'INVALID_PAGING_TOKEN']);

/**
 * The problem of a fault. A fault carrying coregate's problem (its SOAP face) is mapped by code; a core's
 * own fault by what its text says.
 */
export function faultProblem(fault: Fault): Problem {
  const core = {
    faultcode: fault.faultCode,
    faultstring: fault.faultString,
    ...(fault.problem?.code || fault.coreCode ? { code: fault.problem?.code ?? fault.coreCode } : {}),
  };
  const said = `${fault.faultString} ${fault.detailText ?? ''}`;
  const code = fault.problem?.code;
  const detail = fault.problem?.detail ?? fault.faultString;
  if (code === 'UNAUTHENTICATED' || code === 'FORBIDDEN' || (!code && CREDENTIALS_TEXT.test(said)))
    return new Problem(
      403,
      'CORE_CREDENTIALS_REJECTED',
      `The core rejected the credentials: ${detail}`,
      undefined,
      {},
      core,
    );
  if (code === 'RECORD_NOT_FOUND' || (!code && NOT_FOUND_TEXT.test(said))) return recordNotFound(detail);
  if (code && CALLER_PROBLEMS.has(code) && fault.problem?.status === 400)
    return new Problem(400, code as ProblemCode, detail);
  if (code === 'CORE_UNAVAILABLE' || code === 'UNAVAILABLE')
    return coreUnavailable(`The core is unavailable: ${detail}`, 5);
  return new Problem(502, 'CORE_ERROR', `The core refused the call: ${fault.faultString}`, undefined, {}, core);
}

/** cockatiel's breaker states by their names in the metrics. */
const CIRCUIT_STATES: Readonly<Record<CircuitState, CoreCircuitState>> = {
  [CircuitState.Closed]: 'closed',
  [CircuitState.HalfOpen]: 'half_open',
  [CircuitState.Open]: 'open',
  [CircuitState.Isolated]: 'isolated',
};

/** One core: its transport and its circuit breaker. */
interface SymCore {
  readonly sym: number;
  readonly transport: CoreTransport;
  readonly breaker: ReturnType<typeof circuitBreaker>;
}

/**
 * The gateway's core; throws at start for a setting that cannot work (an unreadable certificate).
 * @example const core = symxchangeCore({ settings: config.symxchange!, operations: OPERATIONS, schemas: SHARED_SCHEMAS, listMaximum: 1000 });
 */
export function symxchangeCore(options: SymxchangeCoreOptions): Core {
  const { settings } = options;
  const codec: SymxCodec = createSymxCodec({
    operations: options.operations,
    schemas: options.schemas,
    limits: CORE_XML_LIMITS,
  });
  const forwarding = createForwarding(options.operations, codec.mapping, options.listMaximum);
  // The core is outside the gateway's trust: every answer is checked against the operation's contract.
  const checkAnswer = responseChecker(options.schemas);
  const device = { DeviceType: settings.deviceType, DeviceNumber: settings.deviceNumber };
  const retryAfterSeconds = Math.max(1, Math.ceil(settings.breakerOpenMs / 1000));

  const cores = new Map<number, SymCore>();
  for (const [sym, url] of settings.urls) {
    const breaker = circuitBreaker(
      // A core that cannot be reached or does not answer counts; a fault or a bad answer is an answer.
      handleWhen((error) => error instanceof CoreFailure && error.kind !== 'bad-response'),
      { halfOpenAfter: settings.breakerOpenMs, breaker: new ConsecutiveBreaker(settings.breakerFailures) },
    );
    breaker.onStateChange((state) => {
      if (state === CircuitState.Open) options.onCircuit?.(sym, 'open', url);
      if (state === CircuitState.Closed) options.onCircuit?.(sym, 'closed', url);
    });
    cores.set(sym, { sym, transport: coreTransport(url, settings), breaker });
  }

  /**
   * One exchange under the core's breaker: a gateway status (502, 503, 504) is the core being unavailable,
   * and counts toward opening the circuit like a refused connection.
   */
  async function exchange(core: SymCore, path: string, soapAction: string, xml: string): Promise<CoreAnswer> {
    return core.breaker.execute(async () => {
      const answer = await core.transport.post(path, soapAction, xml);
      if (answer.status === 502 || answer.status === 503 || answer.status === 504)
        throw new CoreFailure('unavailable', `the core answered HTTP ${answer.status}`, {
          ...(answer.retryAfter ? { retryAfter: answer.retryAfter } : {}),
        });
      return answer;
    });
  }

  /** Sends a request once, or twice for a read whose connection was reset under it. */
  async function send(core: SymCore, path: string, soapAction: string, xml: string, read: boolean) {
    try {
      return await exchange(core, path, soapAction, xml);
    } catch (error) {
      if (!read || error instanceof BrokenCircuitError || !failureOf(error).reset) throw error;
      return exchange(core, path, soapAction, xml);
    }
  }

  /** The JSON answer of one operation at one core; throws the gateway's problem otherwise. */
  async function callOperation(core: SymCore, operation: AnyOperation, body: JsonObject, requestId: string) {
    const wire = codec.mapping.wireOperation(operation);
    const xml = codec.encodeRequest(operation, body, { messageId: requestId, deviceInformation: device });
    let answer: CoreAnswer;
    try {
      answer = await send(core, symxchangeService(wire.service).endpointPath, wire.soapAction, xml, !operation.writes);
    } catch (error) {
      if (error instanceof BrokenCircuitError)
        throw coreUnavailable(
          `The core of Sym ${core.sym} is failing; calls are held back for a while`,
          retryAfterSeconds,
        );
      const failure = failureOf(error);
      // A write whose call failed after it was sent may have been applied: the caller should read it back.
      const unsure = operation.writes && failure.kind !== 'bad-response' && failure.sent ? UNSURE_WRITE : '';
      if (failure.kind === 'timeout')
        throw new Problem(504, 'CORE_TIMEOUT', `The core did not answer within ${settings.timeoutMs} ms${unsure}`);
      if (failure.kind === 'bad-response') throw new Problem(502, 'CORE_BAD_RESPONSE', failure.message);
      throw coreUnavailable(
        `The core is unavailable: ${failure.message}${unsure}`,
        Number(failure.retryAfter) || retryAfterSeconds,
      );
    }
    return decodeAnswer(operation, answer);
  }

  function decodeAnswer(operation: AnyOperation, answer: CoreAnswer): JsonObject {
    const isXml = /^\s*(text|application)\/(soap\+)?xml\b/i.test(answer.contentType);
    if ((answer.status !== 200 && answer.status !== 500) || !isXml)
      throw new Problem(
        502,
        'CORE_BAD_RESPONSE',
        `The core answered HTTP ${answer.status} with ${answer.contentType || 'no content type'}, not a SOAP envelope`,
      );
    try {
      return codec.decodeResponse(operation, answer.text).result;
    } catch (error) {
      if (error instanceof SoapFaultError) throw faultProblem(error.fault);
      if (error instanceof SoapCodecError)
        throw new Problem(502, 'CORE_BAD_RESPONSE', `The core's answer is not what SymXchange says: ${error.message}`);
      throw error;
    }
  }

  return {
    kind: 'symxchange',
    syms: [...cores.keys()],
    verifiesCredentials: true,
    async answer(operation, _context, body, call: CoreCall) {
      if (!codec.mapping.carries(operation))
        throw new Problem(
          501,
          'STORE_ONLY',
          `${operation.name} is coregate's own session management: in gateway mode log on at the core and send its TokenId in TokenCredentials`,
        );
      const core = cores.get(call.sym);
      if (!core) throw new Problem(404, 'NOT_FOUND', `No core is configured for Sym ${call.sym}`);
      const started = performance.now();
      let outcome = 'ok';
      const callCore: CallCore = (op, request) => callOperation(core, op, request, call.requestId);
      try {
        const result = await forwarding.answer(operation, body as JsonObject, callCore);
        try {
          checkAnswer(operation, result);
        } catch (error) {
          if (error instanceof ResponseMismatchError)
            throw new Problem(502, 'CORE_BAD_RESPONSE', `The core's answer breaks the contract: ${error.message}`);
          throw error;
        }
        return result;
      } catch (error) {
        outcome = error instanceof Problem ? error.code : 'INTERNAL';
        throw error;
      } finally {
        call.outcome = { latencyMs: Math.round(performance.now() - started), outcome };
      }
    },
    readiness() {
      const states = [...cores.values()].map((core) => ({ sym: core.sym, state: CircuitState[core.breaker.state] }));
      return {
        ready: states.some((s) => s.state !== 'Open'),
        detail: states.map((s) => `${s.sym}: ${s.state.toLowerCase()}`).join(', '),
      };
    },
    circuits() {
      return new Map([...cores.values()].map((core) => [core.sym, CIRCUIT_STATES[core.breaker.state]]));
    },
    async close() {
      await Promise.all([...cores.values()].map((core) => core.transport.close()));
    },
  };
}
