/**
 * The sandbox's fault injection at the edges (the header and its grammar: contract/sandbox-faults.ts). A
 * call's `X-Coregate-Fault` is honoured where its answer would be made: after the token, rate limits, scope,
 * body and credentials (so the call is authenticated, counted and audited as any other), before the core is
 * asked. A forced problem is thrown like a real one, so each edge answers it its own way (problem+json on
 * the JSON API, a SOAP Fault on the SymXchange face).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  DROPPED_STATUS,
  parseSandboxFault,
  sandboxFaultsDisabled,
  SANDBOX_FAULT_HEADER,
} from '../contract/sandbox-faults.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The `X-Coregate-Fault` header the call carried, and the fault rules that fired on it (`rule 7`), for the log. */
    sandboxFault?: string;
  }
}

export interface SandboxFaultOptions {
  /** Whether fault injection is on now (store/fault-injection.ts): while off, a call carrying the header is refused (403). */
  readonly isOn: () => Promise<boolean>;
  /** A dropped call gets no response, so no `onResponse` hook runs: this is told instead, to audit, count and log it. */
  readonly onDropped: (request: FastifyRequest, reply: FastifyReply) => void;
}

const HEADER = SANDBOX_FAULT_HEADER.toLowerCase();
/** The most of the header's value the log keeps. */
const LOGGED_LENGTH = 200;

/** Whether the call asks for a sandbox fault (`X-Coregate-Fault`): only then is `applySandboxFault` needed. */
export const asksForSandboxFault = (request: FastifyRequest): boolean => request.headers[HEADER] !== undefined;

/**
 * Forces the fault the call's header asks for: waits its delay, then throws its problem or drops the
 * connection (and returns true); without a header, or with a delay alone, the call goes on (false).
 * @example if (await applySandboxFault(request, reply, options)) return; // dropped: nothing to answer
 */
export async function applySandboxFault(
  request: FastifyRequest,
  reply: FastifyReply,
  options: SandboxFaultOptions,
): Promise<boolean> {
  const header = request.headers[HEADER];
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(';') : header;
  request.sandboxFault = value.slice(0, LOGGED_LENGTH);
  if (!(await options.isOn())) throw sandboxFaultsDisabled();
  const fault = parseSandboxFault(value);
  if (fault.delayMs > 0) await sleep(fault.delayMs);
  if (fault.problem) throw fault.problem;
  if (!fault.drop) return false;
  dropConnection(request, reply, options);
  return true;
}

/**
 * Closes the call's connection (the socket) without a byte of an answer, as a core that dies mid-call does,
 * and tells `onDropped`, since no response hook will run.
 */
export function dropConnection(
  request: FastifyRequest,
  reply: FastifyReply,
  options: Pick<SandboxFaultOptions, 'onDropped'>,
): void {
  reply.code(DROPPED_STATUS);
  reply.hijack();
  reply.raw.destroy();
  options.onDropped(request, reply);
}
