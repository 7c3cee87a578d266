/**
 * Runtime configuration from the environment. Every setting has a default that runs the quickstart.
 */
import { isIP } from 'node:net';
import { resolve } from 'node:path';

export interface Config {
  readonly port: number;
  readonly host: string;
  /** Directory of the embedded database, the generated master secret and the demo credentials. */
  readonly dataDir: string;
  /** PostgreSQL URL; absent means the embedded database under `<dataDir>/pglite`. */
  readonly databaseUrl: string | undefined;
  /** PostgreSQL connections per process (each `serve --workers` process has its own pool). */
  readonly databasePoolSize: number;
  /** 64 hex characters; instances sharing a database must share it. */
  readonly secret: string | undefined;
  readonly logLevel: LogLevel;
  /** Log lines as JSON (the default, for a log collector) or `pretty` (pino-pretty, for a terminal). */
  readonly logFormat: 'json' | 'pretty';
  /** Who may read `/metrics`: whoever reaches the port (`open`, like `/health`), a live API token (`token`), nobody (`off`). */
  readonly metrics: 'open' | 'token' | 'off';
  /**
   * The sandbox's fault injection (off by default): a call's `X-Coregate-Fault` header forces a problem, a
   * delay or a dropped connection; while off, a call carrying the header is refused (403).
   */
  readonly sandboxFaults: boolean;
  /** Maximum request body in bytes (spec: request size limit "not shown"; DESIGN: 413 above it). */
  readonly bodyLimit: number;
  /** Maximum entries of a list response before hasReachedMaximumListSize (DESIGN: default 1000). */
  readonly listMaximum: number;
  /** Largest page of a paged operation; a larger NumberOfRecordsToReturn is capped to it. */
  readonly pageMaximum: number;
  /** Page size when NumberOfRecordsToReturn is not given. */
  readonly defaultPageSize: number;
  /** Milliseconds a successful password verification is remembered (DESIGN: not a scrypt per request). */
  readonly credentialCacheMs: number;
  /** Milliseconds a verified API token is remembered: a revocation takes effect within this time. */
  readonly tokenCacheMs: number;
  /**
   * FindBy answers kept in memory (the least recently used dropped beyond it), each served only while no
   * change it depends on has been committed since (store/answer-cache.ts); 0 reads every lookup from the database.
   */
  readonly lookupCacheEntries: number;
  /**
   * Megabytes of collateral answers kept in memory (as their JSON text; the least recently used dropped
   * beyond it), each served only while nothing in the collateral tree has changed since; 0 reads every
   * collateral record from the database.
   */
  readonly collateralCacheMb: number;
  /**
   * Password failures in a row from one caller (address and bearer token) that lock a credential for that
   * caller, and for how long; failures older than `lockoutSeconds` are forgotten.
   */
  readonly lockoutThreshold: number;
  readonly lockoutSeconds: number;
  /** Failures of one credential from every caller within `lockoutSeconds` beyond which each check of it waits `lockoutSlowdownMs`. */
  readonly lockoutSlowdownThreshold: number;
  readonly lockoutSlowdownMs: number;
  /**
   * The least time a refused credential check takes, whatever refused it (a wrong password, an unknown or a
   * locked credential); unset, four password checks' time measured at start, at least 250 ms.
   */
  readonly credentialRefusalMs: number | undefined;
  /** A logon session dies after this many idle seconds (DESIGN: 15 minutes). */
  readonly sessionIdleSeconds: number;
  /** Requests per minute per API token, and the stricter limit of FindBy lookups (anti-enumeration). */
  readonly rateLimitPerMinute: number;
  readonly findByRateLimitPerMinute: number;
  /** Redis for rate limits shared by several instances; absent means per-process limits. */
  readonly redisUrl: string | undefined;
  /** Credential kinds accepted per service, where configured (COREGATE_CREDENTIALS_<SERVICE>). */
  readonly credentialPolicy: Readonly<Partial<Record<string, readonly string[]>>>;
  /** How long a request waits for a PostgreSQL connection before it is answered 503 UNAVAILABLE. */
  readonly databaseConnectTimeoutMs: number;
  /** How long one PostgreSQL query may take before it is abandoned (a hung or unreachable server). */
  readonly databaseQueryTimeoutMs: number;
  /**
   * Seconds `serve` waits at start for a PostgreSQL it cannot reach (still starting, restarting) before it
   * exits non-zero; 0 waits forever, for supervisors that prefer it. A host name that does not resolve stops
   * the start at once.
   */
  readonly databaseStartTimeoutS: number;
  /** Milliseconds read events wait in memory before they are written: the audit trail's loss window on a crash. */
  readonly auditFlushMs: number;
  /** Audit events held in memory at most while the database cannot take them; beyond it the oldest are dropped (and counted in the log). */
  readonly auditBufferMax: number;
  /**
   * Whether calls are audited at all (`COREGATE_AUDIT=false` keeps no trail: for measuring and throwaway
   * sandboxes, never for a service in front of members' data).
   */
  readonly auditEnabled: boolean;
  /** Days an audit event is kept at least (a day's events are retired together); 0 keeps them forever. */
  readonly auditRetentionDays: number;
  /** Where retired audit events are written as NDJSON before they are dropped; none: they are dropped. */
  readonly auditExportDir?: string;
  /** A client must send its whole header block within this time (slowloris), and its whole request within `requestTimeoutMs`. */
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this time. */
  readonly keepAliveTimeoutMs: number;
  /**
   * Open client connections at most per process; past it, a new connection takes the place of an idle or
   * unfinished one of the address holding the most, or is closed at once when its own address holds the most.
   */
  readonly maxConnections: number;
  /**
   * Open connections at most from one client address (an IPv6 client by its /64), so that one client cannot
   * take the whole `maxConnections`; 0 for no such limit. A trusted proxy's own connections are not limited.
   */
  readonly maxConnectionsPerAddress: number;
  /**
   * Addresses or CIDR ranges of the load balancers in front of coregate, whose `X-Forwarded-For` names the
   * client (its address is then the client's for rate limits, lockouts, logs and the audit trail); empty
   * trusts none and takes the connection's own address.
   */
  readonly trustedProxies: readonly string[];
  /**
   * The address clients reach coregate at (`https://api.example.com`), written into the WSDLs' endpoint
   * addresses; absent, each WSDL names the listener's own address as the request reached it.
   */
  readonly publicUrl: URL | undefined;
  /**
   * The running coregate the CLI's admin commands call (`COREGATE_URL`), and the token they call it with
   * (`COREGATE_ADMIN_TOKEN`, scope `admin`); without the URL they call the server holding the data directory,
   * with the demo token of its demo-credentials.json (cli/remote.ts).
   */
  readonly adminUrl: URL | undefined;
  readonly adminToken: string | undefined;
  /** The largest records file `POST /admin/import` takes, in bytes (413 above it). */
  readonly importLimitBytes: number;
  /**
   * Streamed exports (`GET /admin/export`, `GET /admin/audit` as NDJSON) running at once per process; another
   * is refused with 429 until one ends.
   */
  readonly exportConcurrency: number;
  /** A streamed export whose client reads nothing for this long is cut off, and its place freed. */
  readonly exportStallMs: number;
  /** On SIGTERM/SIGINT, in-flight requests get this long to finish before every connection is closed and the process exits. */
  readonly shutdownGraceMs: number;
  /**
   * On SIGTERM, how long `/ready` answers 503 while the instance still serves, before it stops listening: for
   * a load balancer that learns of a drain from its health checks alone (one that retries a refused
   * connection needs none).
   */
  readonly shutdownDrainMs: number;
  /** Hours an Idempotency-Key and its response are kept; older keys are swept. */
  readonly idempotencyRetentionHours: number;
  /** Check every operation's result against its response schema (a mismatch is a 500); the test suite sets it. */
  readonly checkResponses: boolean;
  /**
   * What a SymXchange SOAP call must carry: `token`, a bearer token like the JSON API; `credentials`, its
   * body `Credentials` alone, as a real core on a private network takes them.
   */
  readonly soapAuth: 'token' | 'credentials';
  /**
   * Where answers come from: `store`, coregate's own records (the default); `symxchange`, a Symitar core
   * reached over SymXchange (gateway mode, `symxchange` below).
   */
  readonly core: 'store' | 'symxchange';
  /** The cores of gateway mode; undefined in store mode. */
  readonly symxchange: SymxchangeSettings | undefined;
  /** Gateway mode's recording of its exchanges with the core (docs/recording.md); undefined when off. */
  readonly recording: RecordingSettings | undefined;
  /** Tracing with OpenTelemetry (docs/tracing.md): the standard `OTEL_*` variables, and what spans may name. */
  readonly tracing: TracingSettings;
}

/**
 * Spans are exported (OTLP over HTTP) when `OTEL_TRACES_EXPORTER=otlp`, or when it is unset and an OTLP
 * endpoint is (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); printed to stderr, one
 * JSON line each, with `OTEL_TRACES_EXPORTER=console`; never with `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none`. Otherwise no SDK is loaded and tracing costs nothing.
 */
export interface TracingSettings {
  readonly export: boolean;
  /** Where spans go: `otlp`, `console` (stderr), or both (`OTEL_TRACES_EXPORTER=otlp,console`); none while not exported. */
  readonly exporters: readonly TraceExporter[];
  /** `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (default) or `http/json`. */
  readonly protocol: 'http/protobuf' | 'http/json';
  /** `COREGATE_TRACE_ACCOUNT_NUMBERS`: a request's span names the accounts it touched (off by default: no member data). */
  readonly accountNumbers: boolean;
}

/** The span exporters coregate has (`OTEL_TRACES_EXPORTER`). */
export type TraceExporter = 'otlp' | 'console';

/** pino's levels; `silent` logs nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The Sym of the spec's paths (`/gw/627/...`): the one a store serves, and the default core's. */
export const DEFAULT_SYM = 627;

/** How the gateway reaches its SymXchange cores (COREGATE_SYMXCHANGE_*). */
export interface SymxchangeSettings {
  /** The core of each Sym the path may name (`/gw/<sym>/...`): `COREGATE_SYMXCHANGE_URL` is Sym 627's, `COREGATE_SYMXCHANGE_URL_<SYM>` another's. */
  readonly urls: ReadonlyMap<number, URL>;
  /** PEM files: the CA bundle the core's certificate must chain to, and the gateway's client certificate and key (mutual TLS). */
  readonly caFile: string | undefined;
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
  readonly keyPassphrase: string | undefined;
  /** The name the core's certificate must carry, when it is not the URL's host. */
  readonly serverName: string | undefined;
  /** `DeviceInformation` of every request: who the core sees calling. */
  readonly deviceType: string;
  readonly deviceNumber: number;
  readonly connectTimeoutMs: number;
  /** The whole answer must arrive within this time (504 CORE_TIMEOUT otherwise). */
  readonly timeoutMs: number;
  /** The largest answer read from a core, in bytes (502 CORE_BAD_RESPONSE past it). */
  readonly maxAnswerBytes: number;
  /** Keep-alive connections per core. */
  readonly connections: number;
  /** Failures in a row that open the circuit breaker, and how long it stays open before one call may try. */
  readonly breakerFailures: number;
  readonly breakerOpenMs: number;
  /**
   * The SymXchange release spoken when a core's WSDLs cannot be read (`COREGATE_SYMXCHANGE_RELEASE`); unset, the
   * release the core's address names (`…/SymXchange/2020.00`), else 3.0. A core's own WSDLs decide when read.
   */
  readonly release: string | undefined;
  /** A folder holding the core's WSDLs and XSDs, for a core that does not serve them (`COREGATE_SYMXCHANGE_WSDL_DIR`). */
  readonly wsdlDir: string | undefined;
  /**
   * A JSON file of rules mapping the core's Client faults, by status code and words, to the caller's problems
   * (403, 404, 400), tried before the defaults (core/core-fault-rules.ts); checked at start.
   */
  readonly faultRulesFile: string | undefined;
}

/**
 * A recording of every SymXchange exchange of gateway mode, scrubbed as it is written (COREGATE_RECORD_*;
 * docs/recording.md).
 */
export interface RecordingSettings {
  /** `COREGATE_RECORD_DIR`: where the cassettes (and, without COREGATE_RECORD_SECRET, the recording secret) are. */
  readonly dir: string;
  /** `COREGATE_RECORD_SECRET`: the key of the pseudonyms; unset, a secret generated once in the record dir. */
  readonly secret: string | undefined;
  /** `COREGATE_RECORD_FILE_MB`: a cassette file past this size is closed and the next one started. */
  readonly fileBytes: number;
  /** `COREGATE_RECORD_MAX_MB`: the cassettes' total size; past it the oldest file is removed. */
  readonly totalBytes: number;
  /** `COREGATE_RECORD_QUEUE`: lines waiting to be written; past it an exchange is not recorded (counted, logged). */
  readonly queueLines: number;
  /** `COREGATE_RECORD_JITTER_AMOUNTS`: amounts moved by up to ±10% (off: kept as they are). */
  readonly jitterAmounts: boolean;
}

/** The recording settings, when COREGATE_RECORD_DIR is set; it records a core, so it needs gateway mode. */
function recordingSettings(env: NodeJS.ProcessEnv, core: 'store' | 'symxchange'): RecordingSettings | undefined {
  if (!env.COREGATE_RECORD_DIR) return undefined;
  if (core !== 'symxchange')
    throw new Error('COREGATE_RECORD_DIR records the exchanges of gateway mode: it needs COREGATE_CORE=symxchange');
  const secret = env.COREGATE_RECORD_SECRET || undefined;
  if (secret !== undefined && secret.length < 16)
    throw new Error('COREGATE_RECORD_SECRET must be at least 16 characters');
  const fileBytes = integer(env, 'COREGATE_RECORD_FILE_MB', 64, 1, 65_536) * 1024 * 1024;
  const totalBytes = integer(env, 'COREGATE_RECORD_MAX_MB', 1024, 2, 1_048_576) * 1024 * 1024;
  if (totalBytes < 2 * fileBytes)
    throw new Error('COREGATE_RECORD_MAX_MB must be at least twice COREGATE_RECORD_FILE_MB');
  return {
    dir: resolve(env.COREGATE_RECORD_DIR),
    secret,
    fileBytes,
    totalBytes,
    queueLines: integer(env, 'COREGATE_RECORD_QUEUE', 10_000, 1, 10_000_000),
    jitterAmounts: boolean(env, 'COREGATE_RECORD_JITTER_AMOUNTS', false),
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

function oneOf<const T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!values.includes(raw as T)) throw new Error(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** A switch: `true` or `false`; `on` and `off`, which earlier releases documented for some, are still taken. */
function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === 'on') return true;
  if (raw === 'false' || raw === 'off') return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

/**
 * A PostgreSQL connection URL; anything else stops the start naming the variable. The value is not quoted
 * back: it may hold a password.
 */
function databaseUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.DATABASE_URL;
  if (!raw) return undefined;
  const expected = 'DATABASE_URL must be a postgres:// URL (postgres://user:password@host:5432/database)';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${expected}; the value given is not a URL`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')
    throw new Error(`${expected}; it starts with "${url.protocol}"`);
  return raw;
}

/** An IPv4 or IPv6 address, optionally with a prefix length (`10.0.0.0/8`, `fd00::/8`). */
function isAddressOrRange(entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^[0-9]{1,3}$/.test(prefix) && bits <= (version === 4 ? 32 : 128);
}

/**
 * Where a service's URL points, for a message: its host and port (the URL's default port when it names
 * none), never its user or password. A PostgreSQL URL may name the host in its query (`?host=`).
 *
 * @example hostAndPort('postgres://app:secret@db.internal/records', 5432) // 'db.internal:5432'
 */
export function hostAndPort(raw: string, defaultPort: number): string {
  try {
    const url = new URL(raw);
    const host = url.searchParams.get('host') || url.hostname || 'localhost';
    return `${host}:${url.searchParams.get('port') || url.port || defaultPort}`;
  } catch {
    return 'an address that is not a URL';
  }
}

/** `COREGATE_TRUSTED_PROXIES=10.0.0.5,10.1.0.0/16`: the load balancers whose X-Forwarded-For is believed. */
function trustedProxies(env: NodeJS.ProcessEnv): string[] {
  const raw = env.COREGATE_TRUSTED_PROXIES;
  if (!raw) return [];
  const entries = raw.split(',').map((entry) => entry.trim());
  const wrong = entries.find((entry) => !isAddressOrRange(entry));
  if (wrong !== undefined)
    throw new Error(
      `COREGATE_TRUSTED_PROXIES must be a comma-separated list of IP addresses or CIDR ranges, got "${wrong}"`,
    );
  return entries;
}

/**
 * A base URL setting: http or https, with no query, fragment or credentials; undefined when unset. `what`
 * says in the error what the URL must be.
 */
function baseUrl(env: NodeJS.ProcessEnv, name: string, what: string): URL | undefined {
  const raw = env[name];
  if (!raw) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.search || url.hash || url.username || url.password)
    throw new Error(`${name} must be ${what} without query, fragment or credentials, got "${raw}"`);
  return url;
}

/** The public base URL of the service (`COREGATE_PUBLIC_URL`). */
const publicUrl = (env: NodeJS.ProcessEnv) => baseUrl(env, 'COREGATE_PUBLIC_URL', 'an http:// or https:// URL');

/** `COREGATE_URL`: the base URL of a running coregate. */
const adminUrl = (env: NodeJS.ProcessEnv) =>
  baseUrl(env, 'COREGATE_URL', 'the http:// or https:// URL of a running coregate,');

const POLICY_PREFIX = 'COREGATE_CREDENTIALS_';

/** `COREGATE_CREDENTIALS_ACCOUNT=AdministrativeCredentials,CardCredentials` → { account: [...] }. */
function credentialPolicy(env: NodeJS.ProcessEnv): Record<string, string[]> {
  const policy: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(POLICY_PREFIX) || !value) continue;
    policy[name.slice(POLICY_PREFIX.length).toLowerCase()] = value.split(',').map((kind) => kind.trim());
  }
  return policy;
}

const SYM_URL_PREFIX = 'COREGATE_SYMXCHANGE_URL_';

function coreUrl(name: string, raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${name} must be an http:// or https:// URL, got "${raw}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`${name} must be an http:// or https:// URL, got "${raw}"`);
  if (url.search || url.hash || url.username || url.password)
    throw new Error(`${name} must hold no query, fragment or credentials, got "${raw}"`);
  return url;
}

/**
 * The gateway's deadline for a call and how long its circuit stays open, when not set: also what the sandbox's
 * fault rules simulate a core's failures with in store mode (core/simulated-failures.ts).
 */
export const SYMXCHANGE_DEFAULTS = { timeoutMs: 15_000, breakerOpenMs: 10_000 } as const;

/** The gateway's settings; a missing URL or a bad value stops the start with a line naming the variable. */
function symxchangeSettings(env: NodeJS.ProcessEnv): SymxchangeSettings {
  const defaults = SYMXCHANGE_DEFAULTS;
  const urls = new Map<number, URL>();
  if (env.COREGATE_SYMXCHANGE_URL)
    urls.set(DEFAULT_SYM, coreUrl('COREGATE_SYMXCHANGE_URL', env.COREGATE_SYMXCHANGE_URL));
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(SYM_URL_PREFIX) || !value) continue;
    const sym = name.slice(SYM_URL_PREFIX.length);
    if (!/^[0-9]{1,4}$/.test(sym)) throw new Error(`${name}: a Sym is a number of 1 to 4 digits, got "${sym}"`);
    urls.set(Number(sym), coreUrl(name, value));
  }
  if (urls.size === 0)
    throw new Error('COREGATE_CORE=symxchange needs COREGATE_SYMXCHANGE_URL (or COREGATE_SYMXCHANGE_URL_<SYM>)');
  const deviceType = env.COREGATE_SYMXCHANGE_DEVICE_TYPE || 'COREGATE';
  if (deviceType.length > 20) throw new Error(`COREGATE_SYMXCHANGE_DEVICE_TYPE must be at most 20 characters`);
  return {
    urls,
    caFile: env.COREGATE_SYMXCHANGE_CA_FILE || undefined,
    certFile: env.COREGATE_SYMXCHANGE_CERT_FILE || undefined,
    keyFile: env.COREGATE_SYMXCHANGE_KEY_FILE || undefined,
    keyPassphrase: env.COREGATE_SYMXCHANGE_KEY_PASSPHRASE || undefined,
    serverName: env.COREGATE_SYMXCHANGE_SERVERNAME || undefined,
    deviceType,
    deviceNumber: integer(env, 'COREGATE_SYMXCHANGE_DEVICE_NUMBER', 0, -32768, 32767),
    connectTimeoutMs: integer(env, 'COREGATE_SYMXCHANGE_CONNECT_TIMEOUT_MS', 5_000, 100, 600_000),
    timeoutMs: integer(env, 'COREGATE_SYMXCHANGE_TIMEOUT_MS', defaults.timeoutMs, 100, 3_600_000),
    maxAnswerBytes: integer(env, 'COREGATE_SYMXCHANGE_MAX_ANSWER_BYTES', 8 * 1024 * 1024, 4096, 1024 * 1024 * 1024),
    connections: integer(env, 'COREGATE_SYMXCHANGE_CONNECTIONS', 32, 1, 10_000),
    breakerFailures: integer(env, 'COREGATE_SYMXCHANGE_BREAKER_FAILURES', 5, 1, 10_000),
    breakerOpenMs: integer(env, 'COREGATE_SYMXCHANGE_BREAKER_OPEN_MS', defaults.breakerOpenMs, 100, 3_600_000),
    release: releaseName(env.COREGATE_SYMXCHANGE_RELEASE),
    wsdlDir: env.COREGATE_SYMXCHANGE_WSDL_DIR || undefined,
    faultRulesFile: env.COREGATE_SYMXCHANGE_FAULT_RULES || undefined,
  };
}

/** A SymXchange release as installations name it (`3.0`, `2020.00`); which ones coregate knows is the core's to check. */
function releaseName(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^[0-9]{1,4}\.[0-9]{1,2}$/.test(raw))
    throw new Error(`COREGATE_SYMXCHANGE_RELEASE must name a SymXchange release like 3.0 or 2020.00, got "${raw}"`);
  return raw;
}

/** The tracing settings; an exporter coregate does not have (`zipkin`, gRPC) stops the start naming its variable. */
function tracingSettings(env: NodeJS.ProcessEnv): TracingSettings {
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const other = exporters.find((name) => !['otlp', 'console', 'none'].includes(name));
  if (other !== undefined)
    throw new Error(
      `OTEL_TRACES_EXPORTER must be otlp, console or none (coregate exports over OTLP/HTTP or to stderr), got "${other}"`,
    );
  const endpoint = Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
  const named = exporters.length > 0 ? exporters : endpoint ? ['otlp'] : [];
  const chosen = disabled ? [] : (['otlp', 'console'] as const).filter((name) => named.includes(name));
  const exported = chosen.length > 0;
  const protocolVariable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  return {
    export: exported,
    exporters: chosen,
    protocol: chosen.includes('otlp')
      ? oneOf(env, protocolVariable, ['http/protobuf', 'http/json'], 'http/protobuf')
      : 'http/protobuf',
    accountNumbers: boolean(env, 'COREGATE_TRACE_ACCOUNT_NUMBERS', false),
  };
}

/** @example loadConfig({ PORT: '9000' }).port // 9000 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const core = oneOf(env, 'COREGATE_CORE', ['store', 'symxchange'], 'store');
  return {
    port: integer(env, 'PORT', 8627, 0, 65535),
    host: env.HOST || '127.0.0.1',
    dataDir: resolve(env.COREGATE_DATA_DIR || './data'),
    databaseUrl: databaseUrl(env),
    databasePoolSize: integer(env, 'COREGATE_DB_POOL', 10, 1, 1000),
    secret: env.COREGATE_SECRET || undefined,
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', ['json', 'pretty'], 'json'),
    metrics: oneOf(env, 'COREGATE_METRICS', ['open', 'token', 'off'], 'open'),
    sandboxFaults: boolean(env, 'COREGATE_SANDBOX_FAULTS', false),
    bodyLimit: integer(env, 'COREGATE_BODY_LIMIT', 256 * 1024, 1024, 64 * 1024 * 1024),
    listMaximum: integer(env, 'COREGATE_LIST_MAXIMUM', 1000, 1, 100_000),
    pageMaximum: integer(env, 'COREGATE_PAGE_MAXIMUM', 1000, 1, 100_000),
    defaultPageSize: integer(env, 'COREGATE_DEFAULT_PAGE_SIZE', 100, 1, 100_000),
    credentialCacheMs: integer(env, 'COREGATE_CREDENTIAL_CACHE_MS', 60_000, 0, 3_600_000),
    tokenCacheMs: integer(env, 'COREGATE_TOKEN_CACHE_MS', 5_000, 0, 300_000),
    lookupCacheEntries: integer(env, 'COREGATE_LOOKUP_CACHE_ENTRIES', 10_000, 0, 10_000_000),
    collateralCacheMb: integer(env, 'COREGATE_COLLATERAL_CACHE_MB', 16, 0, 65_536),
    lockoutThreshold: integer(env, 'COREGATE_LOCKOUT_THRESHOLD', 5, 1, 1000),
    lockoutSeconds: integer(env, 'COREGATE_LOCKOUT_SECONDS', 900, 1, 86_400 * 30),
    lockoutSlowdownThreshold: integer(env, 'COREGATE_LOCKOUT_SLOWDOWN_THRESHOLD', 100, 1, 1_000_000),
    lockoutSlowdownMs: integer(env, 'COREGATE_LOCKOUT_SLOWDOWN_MS', 1_000, 0, 30_000),
    credentialRefusalMs: env.COREGATE_CREDENTIAL_REFUSAL_MS
      ? integer(env, 'COREGATE_CREDENTIAL_REFUSAL_MS', 0, 1, 30_000)
      : undefined,
    sessionIdleSeconds: integer(env, 'COREGATE_SESSION_IDLE_SECONDS', 900, 1, 86_400),
    rateLimitPerMinute: integer(env, 'COREGATE_RATE_LIMIT', 6000, 1, 100_000_000),
    findByRateLimitPerMinute: integer(env, 'COREGATE_FINDBY_RATE_LIMIT', 1200, 1, 100_000_000),
    redisUrl: env.REDIS_URL || undefined,
    credentialPolicy: credentialPolicy(env),
    databaseConnectTimeoutMs: integer(env, 'COREGATE_DB_CONNECT_TIMEOUT_MS', 5_000, 100, 600_000),
    databaseQueryTimeoutMs: integer(env, 'COREGATE_DB_QUERY_TIMEOUT_MS', 15_000, 100, 3_600_000),
    databaseStartTimeoutS: integer(env, 'COREGATE_DB_START_TIMEOUT_S', 60, 0, 86_400),
    auditFlushMs: integer(env, 'COREGATE_AUDIT_FLUSH_MS', 200, 0, 60_000),
    auditBufferMax: integer(env, 'COREGATE_AUDIT_BUFFER_MAX', 100_000, 100, 10_000_000),
    auditEnabled: boolean(env, 'COREGATE_AUDIT', true),
    auditRetentionDays: integer(env, 'COREGATE_AUDIT_RETENTION_DAYS', 365, 0, 36_500),
    auditExportDir: env.COREGATE_AUDIT_EXPORT_DIR ? resolve(env.COREGATE_AUDIT_EXPORT_DIR) : undefined,
    headersTimeoutMs: integer(env, 'COREGATE_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
    requestTimeoutMs: integer(env, 'COREGATE_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
    keepAliveTimeoutMs: integer(env, 'COREGATE_KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
    maxConnections: integer(env, 'COREGATE_MAX_CONNECTIONS', 2_000, 1, 1_000_000),
    maxConnectionsPerAddress: integer(env, 'COREGATE_MAX_CONNECTIONS_PER_ADDRESS', 256, 0, 1_000_000),
    trustedProxies: trustedProxies(env),
    publicUrl: publicUrl(env),
    adminUrl: adminUrl(env),
    adminToken: env.COREGATE_ADMIN_TOKEN || undefined,
    importLimitBytes: integer(env, 'COREGATE_IMPORT_LIMIT_MB', 1024, 1, 65_536) * 1024 * 1024,
    exportConcurrency: integer(env, 'COREGATE_EXPORT_CONCURRENCY', 2, 1, 1000),
    exportStallMs: integer(env, 'COREGATE_EXPORT_STALL_MS', 30_000, 100, 3_600_000),
    shutdownGraceMs: integer(env, 'COREGATE_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    shutdownDrainMs: integer(env, 'COREGATE_SHUTDOWN_DRAIN_MS', 0, 0, 600_000),
    idempotencyRetentionHours: integer(env, 'COREGATE_IDEMPOTENCY_RETENTION_HOURS', 24, 1, 24 * 365),
    checkResponses: boolean(env, 'COREGATE_CHECK_RESPONSES', false),
    soapAuth: oneOf(env, 'COREGATE_SOAP_AUTH', ['token', 'credentials'], 'token'),
    core,
    symxchange: core === 'symxchange' ? symxchangeSettings(env) : undefined,
    recording: recordingSettings(env, core),
    tracing: tracingSettings(env),
  };
}

/** One setting as docs/configuration.md lists it: its variable (or related ones), its default and what it does. */
export interface SettingDoc {
  readonly variable: string;
  readonly default: string;
  readonly meaning: string;
}

/**
 * The settings `loadConfig` reads, as docs/configuration.md lists them (`npm run docs:config` writes it from
 * this table; test/configuration-doc.test.ts fails when a variable read above is missing here or the doc is stale).
 */
export const SETTINGS: readonly SettingDoc[] = [
  {
    variable: '`PORT` / `HOST`',
    default: '`8627` / `127.0.0.1`',
    meaning:
      "where to listen; a busy port, or a `HOST` that is not this machine's, stops the start before anything is opened",
  },
  {
    variable: '`COREGATE_DATA_DIR`',
    default: '`./data`',
    meaning: 'embedded database, generated master secret, demo credentials',
  },
  {
    variable: '`DATABASE_URL`',
    default: '(embedded)',
    meaning:
      'PostgreSQL 14+ instead of the embedded database: a `postgres://` (or `postgresql://`) URL; anything else stops the start',
  },
  {
    variable: '`COREGATE_DB_POOL`',
    default: '`10`',
    meaning: 'PostgreSQL connections per process (per worker with `serve --workers`)',
  },
  {
    variable: '`COREGATE_DB_CONNECT_TIMEOUT_MS` / `COREGATE_DB_QUERY_TIMEOUT_MS`',
    default: '`5000` / `15000`',
    meaning:
      'how long a call waits for a PostgreSQL connection, and for one query, before it is answered 503 `UNAVAILABLE`',
  },
  {
    variable: '`COREGATE_DB_START_TIMEOUT_S`',
    default: '`60`',
    meaning:
      'how long `serve` waits at start for a PostgreSQL it cannot reach before it exits 1 (`0`: forever); a host that does not resolve stops it at once',
  },
  {
    variable: '`COREGATE_SECRET`',
    default: 'generated into the data dir',
    meaning:
      '64 hex chars; keys the HMACs and encryption of PANs, SSNs and MICR numbers. Instances sharing a database must share it; a store refuses any other than the one it was created with (docs/operating.md, "The secret")',
  },
  { variable: '`COREGATE_LIST_MAXIMUM`', default: '`1000`', meaning: 'longest list returned' },
  {
    variable: '`COREGATE_PAGE_MAXIMUM` / `COREGATE_DEFAULT_PAGE_SIZE`',
    default: '`1000` / `100`',
    meaning: 'largest and default page of paged operations',
  },
  { variable: '`COREGATE_BODY_LIMIT`', default: '`262144`', meaning: 'largest request body in bytes (413 above)' },
  {
    variable: '`COREGATE_HEADERS_TIMEOUT_MS` / `COREGATE_REQUEST_TIMEOUT_MS`',
    default: '`10000` / `30000`',
    meaning: 'a client must send its headers, and its whole request, within these (408 and closed otherwise)',
  },
  {
    variable: '`COREGATE_KEEP_ALIVE_TIMEOUT_MS`',
    default: '`5000`',
    meaning: 'an idle keep-alive connection is closed after this',
  },
  {
    variable: '`COREGATE_MAX_CONNECTIONS`',
    default: '`2000`',
    meaning:
      'open connections per process; past it, a new connection takes the place of an idle or unfinished one of the address holding the most, or is closed when its own address holds the most',
  },
  {
    variable: '`COREGATE_MAX_CONNECTIONS_PER_ADDRESS`',
    default: '`256`',
    meaning:
      "open connections per client address (an IPv6 client by its /64), so one client cannot take the whole cap; `0`: no such limit. A trusted proxy's own connections are not limited",
  },
  {
    variable: '`COREGATE_TRUSTED_PROXIES`',
    default: '(none)',
    meaning:
      "addresses or CIDR ranges of your load balancers (`10.0.0.5,10.1.0.0/16`): their `X-Forwarded-For` names the client, whose address then counts for rate limits, lockouts, the log and the audit trail; nobody else's `X-Forwarded-For` is believed",
  },
  {
    variable: '`COREGATE_PUBLIC_URL`',
    default: '(the listener)',
    meaning:
      "the URL clients reach coregate at (`https://api.example.com`), written into the WSDLs' endpoint addresses; without it a WSDL names the address and port the request reached, never the request's `Host` header",
  },
  {
    variable: '`COREGATE_SHUTDOWN_GRACE_MS`',
    default: '`10000`',
    meaning:
      'on SIGTERM/SIGINT, requests in flight get this long before every connection is closed and the process exits',
  },
  {
    variable: '`COREGATE_SHUTDOWN_DRAIN_MS`',
    default: '`0`',
    meaning:
      'on SIGTERM/SIGINT, `/ready` answers 503 at once and the instance keeps serving this long before it stops listening: set it behind a load balancer, longer than its health checks take to mark an instance down, so that no idle connection is closed while the balancer may still send a request on it',
  },
  {
    variable: '`COREGATE_URL` / `COREGATE_ADMIN_TOKEN`',
    default: '(the server holding the data dir) / (its demo token)',
    meaning:
      "for the CLI's admin commands: the running coregate whose admin API they call, and a token with the `admin` scope to call it with",
  },
  {
    variable: '`COREGATE_IMPORT_LIMIT_MB`',
    default: '`1024`',
    meaning: 'the largest records file `POST /admin/import` takes (413 above)',
  },
  {
    variable: '`COREGATE_EXPORT_CONCURRENCY` / `COREGATE_EXPORT_STALL_MS`',
    default: '`2` / `30000`',
    meaning:
      'streamed exports (`GET /admin/export`, `GET /admin/audit` as NDJSON) running at once per process, the next refused with 429 and `Retry-After`; an export whose client reads nothing for this long is cut off',
  },
  {
    variable: '`COREGATE_AUDIT_FLUSH_MS` / `COREGATE_AUDIT_BUFFER_MAX`',
    default: '`200` / `100000`',
    meaning:
      "read events are written in batches this often (an update's event commits with the update); events held while the database is down",
  },
  {
    variable: '`COREGATE_AUDIT_RETENTION_DAYS`',
    default: '`365`',
    meaning:
      "audit events are kept at least this many days, then retired by whole UTC days (on PostgreSQL a day's partition is dropped); `0` keeps them forever",
  },
  {
    variable: '`COREGATE_AUDIT_EXPORT_DIR`',
    default: '(none)',
    meaning:
      'retired audit events are first written here as NDJSON (`audit_event_p20261126.ndjson`, mode 0600), as `GET /admin/audit` streams them; without it they are dropped',
  },
  {
    variable: '`COREGATE_AUDIT`',
    default: '`true`',
    meaning: '`false` keeps no audit trail at all (for measuring or a throwaway sandbox; the start logs a warning)',
  },
  {
    variable: '`REDIS_URL`',
    default: '(none)',
    meaning: 'share rate limits between instances (while Redis is down, each instance limits on its own)',
  },
  {
    variable: '`COREGATE_RATE_LIMIT` / `COREGATE_FINDBY_RATE_LIMIT`',
    default: '`6000` / `1200`',
    meaning: 'requests per minute per token',
  },
  {
    variable: '`COREGATE_TOKEN_CACHE_MS`',
    default: '`5000`',
    meaning: 'how long a verified API token is remembered (a revocation takes effect within it)',
  },
  {
    variable: '`COREGATE_CREDENTIAL_CACHE_MS`',
    default: '`60000`',
    meaning: 'how long a password verification, right or wrong, is remembered (no scrypt per call)',
  },
  {
    variable: '`COREGATE_LOOKUP_CACHE_ENTRIES`',
    default: '`10000`',
    meaning:
      'FindBy answers kept in memory, each served only while nothing it reads has changed since, on any instance (`0`: none)',
  },
  {
    variable: '`COREGATE_COLLATERAL_CACHE_MB`',
    default: '`16`',
    meaning:
      'answers of collateral record reads kept in memory, in megabytes of their JSON, each served only while nothing in the collateral tree has changed since, on any instance (`0`: none)',
  },
  {
    variable: '`COREGATE_LOCKOUT_THRESHOLD` / `COREGATE_LOCKOUT_SECONDS`',
    default: '`5` / `900`',
    meaning:
      "password lockout per credential and caller (bearer token and client address); the admin password's lock starts at 1 s, doubling up to the seconds; failures older than the seconds are forgotten",
  },
  {
    variable: '`COREGATE_LOCKOUT_SLOWDOWN_THRESHOLD` / `COREGATE_LOCKOUT_SLOWDOWN_MS`',
    default: '`100` / `1000`',
    meaning:
      'a credential failing more often than this within the lockout seconds, from every caller together, makes each check of it wait this long (never a lock)',
  },
  {
    variable: '`COREGATE_CREDENTIAL_REFUSAL_MS`',
    default: "four password checks' time, measured at start (at least 250)",
    meaning:
      'the least time a refused credential takes, whether its password was wrong, it does not exist or the caller is locked out of it: the time tells none of them apart',
  },
  { variable: '`COREGATE_SESSION_IDLE_SECONDS`', default: '`900`', meaning: 'logon session idle timeout' },
  {
    variable: '`COREGATE_IDEMPOTENCY_RETENTION_HOURS`',
    default: '`24`',
    meaning: 'how long an `Idempotency-Key` and its response are kept; older keys are swept hourly',
  },
  {
    variable: '`COREGATE_JWT_JWKS_URL`, `COREGATE_JWT_ISSUER`, `COREGATE_JWT_AUDIENCE`',
    default: '(none)',
    meaning: 'accept identity-provider JWTs',
  },
  {
    variable: '`COREGATE_CREDENTIALS_<SERVICE>`',
    default: 'see decisions',
    meaning: 'credential kinds a service accepts; an unknown service or kind stops the start',
  },
  {
    variable: '`LOG_LEVEL`',
    default: '`info`',
    meaning: '`fatal`, `error`, `warn`, `info` (one line per request), `debug`, `trace` or `silent`',
  },
  {
    variable: '`LOG_FORMAT`',
    default: '`json`',
    meaning:
      '`json`: one JSON object per line, for a log collector; `pretty`: readable lines for a terminal (pino-pretty)',
  },
  {
    variable: '`COREGATE_METRICS`',
    default: '`open`',
    meaning:
      'who may read `/metrics`: whoever reaches the port (`open`, like `/health`), a live API token (`token`), nobody (`off`)',
  },
  {
    variable: '`COREGATE_SANDBOX_FAULTS`',
    default: '`false`',
    meaning:
      '`true` lets a call\'s `X-Coregate-Fault` header force a problem, a delay or a dropped connection (docs/operating.md, "Sandbox controls"); while `false`, a call carrying it is a 403',
  },
  {
    variable: '`COREGATE_SOAP_AUTH`',
    default: '`token`',
    meaning:
      'what a SymXchange SOAP call must carry: `token` (a bearer token, like the JSON API) or `credentials` (its body `Credentials` alone; calls are rate limited per client address)',
  },
  {
    variable: '`COREGATE_CHECK_RESPONSES`',
    default: '`false`',
    meaning:
      "check every answer against its operation's response schema (a mismatch is a 500 and logged); the test suite sets it",
  },
  {
    variable: '`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_TRACES_EXPORTER`, `OTEL_*`',
    default: '(none: no tracing)',
    meaning: 'export spans over OTLP/HTTP; the variables coregate reads are in docs/tracing.md',
  },
  {
    variable: '`COREGATE_TRACE_ACCOUNT_NUMBERS`',
    default: '`false`',
    meaning: "`true` lets a request's span name the account numbers it touched; off, no span holds member data",
  },
  {
    variable: '`COREGATE_CORE`',
    default: '`store`',
    meaning:
      "`store` answers from coregate's own records; `symxchange` makes coregate a gateway to a SymXchange core, whose `COREGATE_SYMXCHANGE_*` settings are in docs/gateway.md",
  },
  {
    variable: '`COREGATE_RECORD_DIR`',
    default: '(off)',
    meaning:
      'gateway mode: record every SymXchange exchange, scrubbed of member data as it is written, to cassettes in this folder (docs/recording.md)',
  },
  {
    variable: '`COREGATE_RECORD_SECRET`',
    default: '(generated in the record dir)',
    meaning: "the key of the recording's pseudonyms: the same secret maps the same SSN to the same pseudonym",
  },
  {
    variable: '`COREGATE_RECORD_FILE_MB` / `COREGATE_RECORD_MAX_MB`',
    default: '`64` / `1024`',
    meaning: 'a cassette file past this size is closed; past the total, the oldest file is removed',
  },
  {
    variable: '`COREGATE_RECORD_QUEUE`',
    default: '`10000`',
    meaning:
      'exchanges waiting to be written; past it an exchange is not recorded (counted and logged), never waited for',
  },
  {
    variable: '`COREGATE_RECORD_JITTER_AMOUNTS`',
    default: '`false`',
    meaning: 'jitter the recorded amounts as well (kept as they are by default)',
  },
];
