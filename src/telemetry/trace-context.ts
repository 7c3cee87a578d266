/**
 * The caller's W3C Trace Context (`traceparent` and `tracestate`), as a process that takes no part in the
 * trace passes it on: checked against the W3C grammar and its bounds, never changed. An invalid
 * `traceparent` is dropped with its `tracestate`; an invalid `tracestate` alone (too long, too many members,
 * a member out of the grammar, a key twice) is dropped and the `traceparent` kept.
 */

export interface TraceContext {
  /** As the caller sent it. */
  readonly traceparent: string;
  /** As the caller sent it (several headers joined by commas, which the grammar allows). */
  readonly tracestate?: string;
  /** The trace id the `traceparent` names, for the log and the audit trail. */
  readonly traceId: string;
}

/** Version 00: exactly these four fields. */
const TRACEPARENT_V00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
/** A later version (never `ff`): version 00's fields first, and maybe more after a dash, read no further. */
const TRACEPARENT_LATER = /^(?!00|ff)[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(?:-[\x21-\x7e]*)?$/;
/** Longest `traceparent` passed on: version 00's is 55 characters; a later one may add fields, not without end. */
const TRACEPARENT_MAX_LENGTH = 256;
const ALL_ZEROS = /^0+$/;

/** What W3C asks every vendor to pass on at least; longer lists are dropped rather than cut. */
const TRACESTATE_MAX_LENGTH = 512;
const TRACESTATE_MAX_MEMBERS = 32;
/** `key=value`: a simple or a multi-tenant key, and a value of printable ASCII without `,` or `=`, not ending in a space. */
const TRACESTATE_MEMBER =
  /^([a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/** One header's value, when it came once as a string. */
const single = (value: string | string[] | undefined) => (typeof value === 'string' ? value : undefined);

/**
 * The trace id of a valid `traceparent`, or undefined.
 * @example traceIdOf('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01') // '4bf92f3577b34da6a3ce929d0e0e4736'
 */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  if (traceparent === undefined || traceparent.length > TRACEPARENT_MAX_LENGTH) return undefined;
  const match = TRACEPARENT_V00.exec(traceparent) ?? TRACEPARENT_LATER.exec(traceparent);
  if (!match || ALL_ZEROS.test(match[1]!) || ALL_ZEROS.test(match[2]!)) return undefined;
  return match[1];
}

/**
 * Whether a `tracestate` is within W3C's grammar and bounds: at most 512 characters and 32 members, each key
 * once (empty members, from stray commas, count for nothing).
 * @example validTracestate('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7') // true
 */
export function validTracestate(tracestate: string): boolean {
  if (tracestate.length > TRACESTATE_MAX_LENGTH) return false;
  const members = tracestate
    .split(',')
    .map((member) => member.trim())
    .filter((member) => member !== '');
  if (members.length > TRACESTATE_MAX_MEMBERS) return false;
  const keys = new Set<string>();
  for (const member of members) {
    const key = TRACESTATE_MEMBER.exec(member)?.[1];
    if (key === undefined || keys.has(key)) return false;
    keys.add(key);
  }
  return true;
}

/** A request's headers, as Node gives them. */
type Headers = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The trace id of a request's valid `traceparent`, or undefined: for its log lines and its audit event.
 * @example callerTraceId({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }) // '4bf92f3577b34da6a3ce929d0e0e4736'
 */
export function callerTraceId(headers: Headers): string | undefined {
  return traceIdOf(single(headers.traceparent));
}

/**
 * The trace context of a request's headers, when its `traceparent` is valid; its `tracestate` with it when
 * that is valid too.
 * @example callerTraceContext({ traceparent: '00-4bf9…-00f0…-01', tracestate: 'congo=t61rcWkgMzE' })?.traceId // '4bf9…'
 */
export function callerTraceContext(headers: Headers): TraceContext | undefined {
  const traceparent = single(headers.traceparent);
  const traceId = traceIdOf(traceparent);
  if (traceparent === undefined || traceId === undefined) return undefined;
  const tracestate = single(headers.tracestate);
  return {
    traceparent,
    traceId,
    ...(tracestate !== undefined && validTracestate(tracestate) ? { tracestate } : {}),
  };
}
