/**
 * The PostgreSQL wire protocol as the embedded database's connection speaks it: the few frontend messages
 * it sends (extended query protocol, text values; PGlite's own serializer writes all but Bind) and the backend
 * messages it reads back.
 *
 * PGlite's own `execProtocol` copies every chunk the backend writes, parses it with a general protocol
 * parser and wraps each call in a filesystem-sync lock; on an update that was a fifth of the server's CPU
 * (docs/performance.md, "PGlite: one connection, WebAssembly"). The connection instead takes the raw
 * bytes (`execProtocolRawStream`) and reads them here, in one pass, into rows.
 */
import { messages, protocol } from '@electric-sql/pglite';

/** Turns a column's text into its value, by type OID (PGlite's parsers with coregate's own). */
export type Parsers = Readonly<Record<number, ((text: string, typeId: number) => unknown) | undefined>>;

// ---- Frontend messages ----
// PGlite's own serializer writes them, but for Bind (below); the constant ones are written once.

const { serialize } = protocol;

/** Parse: prepares `text` as the statement `name` ('' for the unnamed one), parameter types inferred. */
export function parseMessage(name: string, text: string): Uint8Array {
  return serialize.parse({ name, text });
}

/**
 * Bind: the unnamed portal over statement `name`, every value in text form (null for SQL NULL). Written
 * here, not by `serialize.bind`: it goes with every query, and PGlite's took 15 µs for seven values (9 µs
 * for none) against 2 µs for this one (docs/decisions.md, "The embedded database").
 */
export function bindMessage(name: string, values: readonly (string | null)[]): Uint8Array {
  const encoded = values.map((value) => (value === null ? null : Buffer.from(value, 'utf8')));
  const nameLength = Buffer.byteLength(name, 'utf8');
  const bodyLength = 1 + nameLength + 1 + 2 + 2 + encoded.reduce((sum, v) => sum + 4 + (v?.length ?? 0), 0) + 2;
  const message = Buffer.allocUnsafe(1 + 4 + bodyLength);
  message[0] = 0x42; // 'B'
  let at = message.writeInt32BE(4 + bodyLength, 1);
  message[at++] = 0; // the unnamed portal
  at += message.write(name, at, 'utf8');
  message[at++] = 0;
  at = message.writeInt16BE(0, at); // no format codes: every parameter in text form
  at = message.writeInt16BE(encoded.length, at);
  for (const value of encoded) {
    at = message.writeInt32BE(value === null ? -1 : value.length, at);
    if (value) at += value.copy(message, at);
  }
  message.writeInt16BE(0, at); // results in text form
  return message;
}

const DESCRIBE_PORTAL = serialize.describe({ type: 'P' });
const EXECUTE = serialize.execute();

/** Describe: of the unnamed portal ('P'), or of the statement `name` ('S'). */
export function describeMessage(type: 'P' | 'S', name = ''): Uint8Array {
  return type === 'P' && name === '' ? DESCRIBE_PORTAL : serialize.describe({ type, name });
}

/** Execute: the unnamed portal, every row. */
export function executeMessage(): Uint8Array {
  return EXECUTE;
}

/** Close: the prepared statement `name`. */
export function closeMessage(name: string): Uint8Array {
  return serialize.close({ type: 'S', name });
}

const SYNC = serialize.sync();

/** Sync: ends the call; after an error the backend skips to it. */
export function syncMessage(): Uint8Array {
  return SYNC;
}

// ---- Backend messages ----

const NUL = 0;

/** The result of one statement: its rows and how many rows it changed. */
export interface WireResult {
  readonly rows: Record<string, unknown>[];
  readonly affectedRows: number;
}

/** What one call into the backend answered. */
export interface WireReply {
  /** One per statement completed, in order. */
  readonly results: WireResult[];
  /** The parameter types of a described statement. */
  readonly paramTypes: number[];
}

/** Commands whose tag ends in the number of rows they changed ("UPDATE 3", "INSERT 0 5"). */
const COUNTED = new Set(['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE']);

/** ErrorResponse field codes and the DatabaseError properties they fill (as PGlite's own parser does). */
const ERROR_FIELDS: Readonly<Record<string, keyof messages.DatabaseError>> = {
  S: 'severity',
  C: 'code',
  D: 'detail',
  H: 'hint',
  P: 'position',
  p: 'internalPosition',
  q: 'internalQuery',
  W: 'where',
  s: 'schema',
  t: 'table',
  c: 'column',
  d: 'dataType',
  n: 'constraint',
  F: 'file',
  L: 'line',
  R: 'routine',
};

/** Reads the backend messages of one call. */
class Reader {
  offset = 0;

  constructor(private readonly buffer: Buffer) {}

  get more(): boolean {
    return this.offset + 5 <= this.buffer.length;
  }

  byte(): number {
    return this.buffer[this.offset++]!;
  }

  int16(): number {
    const value = this.buffer.readInt16BE(this.offset);
    this.offset += 2;
    return value;
  }

  int32(): number {
    const value = this.buffer.readInt32BE(this.offset);
    this.offset += 4;
    return value;
  }

  cstring(): string {
    const end = this.buffer.indexOf(NUL, this.offset);
    const value = this.buffer.toString('utf8', this.offset, end);
    this.offset = end + 1;
    return value;
  }

  text(length: number): string {
    const value = this.buffer.toString('utf8', this.offset, this.offset + length);
    this.offset += length;
    return value;
  }

  skip(count: number): void {
    this.offset += count;
  }
}

function databaseError(reader: Reader, length: number): messages.DatabaseError {
  const fields: Record<string, string> = {};
  for (let code = reader.byte(); code !== NUL; code = reader.byte()) {
    fields[String.fromCharCode(code)] = reader.cstring();
  }
  const error = new messages.DatabaseError(fields.M ?? 'unknown database error', length, 'error');
  for (const [code, property] of Object.entries(ERROR_FIELDS)) {
    if (fields[code] !== undefined) (error as unknown as Record<string, string>)[property] = fields[code];
  }
  return error;
}

/**
 * The results of one call's backend messages, text values parsed by type. The first error the backend
 * reported is thrown (what follows it in the call was skipped by the backend).
 */
export function readReply(bytes: Buffer, parsers: Parsers): WireReply {
  const reader = new Reader(bytes);
  const results: WireResult[] = [];
  let paramTypes: number[] = [];
  let fields: { name: string; typeId: number }[] = [];
  let rows: Record<string, unknown>[] = [];
  while (reader.more) {
    const type = String.fromCharCode(reader.byte());
    const length = reader.int32();
    const end = reader.offset + length - 4;
    switch (type) {
      case 'T': {
        const count = reader.int16();
        fields = [];
        for (let i = 0; i < count; i++) {
          const name = reader.cstring();
          reader.skip(6); // table OID, column number
          fields.push({ name, typeId: reader.int32() });
          reader.skip(8); // type size, type modifier, format
        }
        break;
      }
      case 'D': {
        const count = reader.int16();
        const row: Record<string, unknown> = {};
        for (let i = 0; i < count; i++) {
          const size = reader.int32();
          const field = fields[i]!;
          if (size < 0) {
            row[field.name] = null;
            continue;
          }
          const text = reader.text(size);
          const parse = parsers[field.typeId];
          row[field.name] = parse ? parse(text, field.typeId) : text;
        }
        rows.push(row);
        break;
      }
      case 'C': {
        const tag = reader.cstring().split(' ');
        const affectedRows = COUNTED.has(tag[0]!) ? Number(tag.at(-1)) : 0;
        results.push({ rows, affectedRows });
        rows = [];
        fields = [];
        break;
      }
      case 't': {
        const count = reader.int16();
        paramTypes = Array.from({ length: count }, () => reader.int32());
        break;
      }
      case 'E':
        throw databaseError(reader, length);
      // ParseComplete, BindComplete, CloseComplete, NoData, EmptyQuery, ReadyForQuery, notices: nothing to keep.
    }
    reader.offset = end;
  }
  return { results, paramTypes };
}
