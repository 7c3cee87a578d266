/**
 * The answer to a request Node's HTTP parser could not read (a bad request line or header, a header block over
 * `http.maxHeaderSize`, a broken chunked body) or that missed its deadline: Fastify has no request for it, so
 * the problem (on the SOAP face, once the request line was read, a Fault) is written on the connection.
 */
import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { headersTooLarge, malformedRequest, problemBody, requestTimedOut, type Problem } from '../contract/problems.js';
import { faultEnvelope } from '../symxchange/faults.js';
import type { Connections } from './connections.js';
import { SOAP_CONTENT_TYPE } from './soap-routes.js';

/** What Node reports: a parser error has an llhttp code (`HPE_…`) and reason; a failed connection has neither. */
type ClientError = Error & { readonly code?: string; readonly reason?: string };

function problemOf({ code, reason }: ClientError): Problem | undefined {
  if (code === 'HPE_HEADER_OVERFLOW') return headersTooLarge(maxHeaderSize);
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return requestTimedOut();
  return code?.startsWith('HPE_')
    ? malformedRequest(`The request is not valid HTTP/1.1: ${reason ?? code}`)
    : undefined;
}

/**
 * Fastify's `clientErrorHandler`: answers with the headers of every answer (`headers`), as Node itself would
 * only while nothing of another answer was sent on the connection, then closes it.
 * @example Fastify({ clientErrorHandler: clientErrorHandler(connections, SECURITY_HEADERS) })
 */
export function clientErrorHandler(connections: Connections, headers: Readonly<Record<string, string>>) {
  return (error: ClientError, socket: Socket): void => {
    const problem = problemOf(error);
    const { request, answer } = connections.inFlight(socket) ?? {};
    if (problem && socket.writable && !answer?.headersSent) {
      const soap = request?.method === 'POST' && request.url?.startsWith('/SymXchange/') === true;
      const body = problemBody(problem, request?.url);
      const [status, type, text] = soap
        ? [500, SOAP_CONTENT_TYPE, faultEnvelope(body)]
        : [problem.status, 'application/problem+json; charset=utf-8', JSON.stringify(body)];
      const fields = {
        ...headers,
        'content-type': type,
        'content-length': Buffer.byteLength(text),
        connection: 'close',
      };
      const head = Object.entries(fields).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${head.join('')}\r\n${text}`);
    }
    socket.destroy();
  };
}
