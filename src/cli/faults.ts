/**
 * `coregate faults add|list|clear|enable|disable`: the sandbox's fault rules, and fault injection switched on
 * or off (docs/operating.md, "Fault rules"). On the
 * coregate serving the data directory, or at `COREGATE_URL`, through its admin API (cli/remote.ts); with no
 * server running, on the database itself, which every server reads. The same output either way.
 */
import type { Config } from '../config.js';
import type { FaultRule, FaultRuleRequest } from '../contract/fault-rules.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';
import { administer } from './commands.js';
import { adminCall } from './remote.js';
import type { Db } from '../database/database.js';

type Print = (line: string) => void;

const FAULTS: CommandSpec = {
  usage: `Usage: coregate faults add --operations NAME|PREFIX*|* WHAT [HOW OFTEN] [--face json|soap|both]
       coregate faults list
       coregate faults clear [ID]
       coregate faults enable|disable

A fault rule makes the calls it matches fail for unmodified clients as a failing core makes them fail, while
fault injection is on. It applies on every worker within a second.
enable / disable turn fault injection (the rules and the X-Coregate-Fault header) on or off for every worker
and instance within a second, kept in the database; COREGATE_SANDBOX_FAULTS=true is only its start value.
WHAT (one of these, with or without --latency):
  --code CODE [--status S]        a problem: CORE_UNAVAILABLE, CORE_TIMEOUT, RECORD_NOT_FOUND, …
  --soap-fault Client|Server      a SOAP Fault of that class (the JSON API answers 502 CORE_ERROR)
  --drop                          the connection closed (the JSON API answers 503 CORE_UNAVAILABLE)
  --malformed truncated|not-xml   a broken answer (the JSON API answers 502 CORE_BAD_RESPONSE)
  --latency MS [--jitter MS]      the answer MS late, and up to --jitter MS more
HOW OFTEN:
  --probability P                 the chance it fires on a call it matches (0 to 1; default 1)
  --times N                       the next N calls it matches, counted across every worker
  --until TIME | --for DURATION   when it expires: RFC 3339, or 30s, 10m, 2h (default 1h, at most 24h)

It calls the coregate serving the data directory, or COREGATE_URL (with COREGATE_ADMIN_TOKEN); with no
server running it changes the database itself.`,
  options: {
    operations: { type: 'string' },
    face: { type: 'string' },
    code: { type: 'string' },
    status: { type: 'string' },
    'soap-fault': { type: 'string' },
    drop: { type: 'boolean' },
    malformed: { type: 'string' },
    latency: { type: 'string' },
    jitter: { type: 'string' },
    probability: { type: 'string' },
    times: { type: 'string' },
    until: { type: 'string' },
    for: { type: 'string' },
  },
};

const DURATION_UNITS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000 };

/** `--for`: a number of seconds, minutes or hours from now. */
function untilAfter(duration: string): string {
  const match = /^([0-9]{1,6})([smh])$/.exec(duration);
  if (!match) throw new UsageError(`--for takes a duration such as 30s, 10m or 2h, got "${duration}"`);
  return new Date(Date.now() + Number(match[1]) * DURATION_UNITS[match[2]!]!).toISOString();
}

/** `--probability`: a number from 0 to 1. */
function probabilityOption(value: string): number {
  const probability = Number(value);
  if (!/^(0|1|0?\.[0-9]+|[01]\.[0-9]+)$/.test(value) || probability > 1)
    throw new UsageError(`--probability must be a number from 0 to 1, got "${value}"`);
  return probability;
}

/** The rule the options describe, as the admin API takes it (the server checks the rest). */
function ruleRequest(
  values: Readonly<Record<string, string | undefined>>,
  flags: ReadonlySet<string>,
): FaultRuleRequest {
  const integer = (name: string) =>
    values[name] === undefined ? undefined : integerOption(values[name], name, 0, FAULTS);
  if (values.operations === undefined) throw new UsageError(`--operations is required\n\n${FAULTS.usage}`);
  if (values.until !== undefined && values.for !== undefined)
    throw new UsageError('--until and --for both say when it expires: give one');
  const request = {
    operations: values.operations,
    face: values.face,
    code: values.code,
    status: integer('status'),
    soapFault: values['soap-fault'],
    drop: flags.has('drop') ? true : undefined,
    malformed: values.malformed,
    latencyMs: integer('latency'),
    jitterMs: integer('jitter'),
    probability: values.probability === undefined ? undefined : probabilityOption(values.probability),
    times: integer('times'),
    until: values.for === undefined ? values.until : untilAfter(values.for),
  };
  return Object.fromEntries(Object.entries(request).filter(([, value]) => value !== undefined)) as FaultRuleRequest;
}

/** What a rule does, in a few words: `CORE_UNAVAILABLE 503`, `SOAP Fault Client`, `+2000..2500 ms`. */
function effectOf(rule: FaultRule): string {
  const parts: string[] = [];
  if (rule.code !== undefined) parts.push(`${rule.code}${rule.status === undefined ? '' : ` ${rule.status}`}`);
  if (rule.soapFault !== undefined) parts.push(`SOAP Fault ${rule.soapFault}`);
  if (rule.drop) parts.push('drop');
  if (rule.malformed !== undefined) parts.push(`malformed (${rule.malformed})`);
  if (rule.latencyMs !== undefined || rule.jitterMs !== undefined) {
    const latency = rule.latencyMs ?? 0;
    parts.push(rule.jitterMs ? `+${latency}..${latency + rule.jitterMs} ms` : `+${latency} ms`);
  }
  return parts.join(', ');
}

/** How often a rule fires and has fired. */
function frequencyOf(rule: FaultRule): string {
  const chance = rule.probability === 1 ? '' : `p=${rule.probability}, `;
  const calls = rule.times === null ? 'every call' : `the next ${rule.times} calls (${rule.remaining} left)`;
  return `${chance}${calls}, fired ${rule.fired}`;
}

/** One rule as `faults list` and `faults add` show it. */
const ruleLine = (rule: FaultRule) =>
  `${rule.id}\t${rule.operations}\t${rule.face}\t${effectOf(rule)}\t${frequencyOf(rule)}\tuntil ${rule.until}`;

/**
 * The rules' store, loaded only when the command works on the database itself: through a running server's
 * admin API it is not needed, and loading it would cost that command most of its time.
 */
async function onTheDatabase() {
  const [{ faultRulesDisabled }, { faultRuleAdmin }, { faultInjection }] = await Promise.all([
    import('../contract/fault-rules.js'),
    import('../operations/fault-rules.js'),
    import('../store/fault-injection.js'),
  ]);
  /** The database itself is changed only where its servers would apply the rules. */
  const sandboxOnly = async (db: Db, config: Config) => {
    if (!(await faultInjection.isOn(db, config.sandboxFaults))) throw faultRulesDisabled();
  };
  return { faultRuleAdmin, faultInjection, sandboxOnly };
}

export async function faultsCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags, positionals } = parseCommand(FAULTS, argv);
  if (flags.has('help')) return print(FAULTS.usage);
  const [action, ...rest] = positionals;
  if (!action)
    throw new UsageError(`coregate faults needs an action: add, list, clear, enable or disable\n\n${FAULTS.usage}`);
  if (rest.length > (action === 'clear' ? 1 : 0))
    throw new UsageError(`Unexpected "${rest.join(' ')}"\n\n${FAULTS.usage}`);
  switch (action) {
    case 'add': {
      const request = ruleRequest(values, flags);
      const added = await administer<FaultRule>(config, 'faults', {
        remote: (server) => adminCall(server, 'POST', '/admin/faults', request),
        local: async ({ database: { db } }) => {
          const { faultRuleAdmin, sandboxOnly } = await onTheDatabase();
          await sandboxOnly(db, config);
          return faultRuleAdmin.add(db, request, null);
        },
      });
      print(`Added fault rule ${added.id}:`);
      print(ruleLine(added));
      return;
    }
    case 'list': {
      const { rules } = await administer<{ rules: FaultRule[] }>(config, 'faults', {
        remote: (server) => adminCall(server, 'GET', '/admin/faults'),
        local: async ({ database: { db } }) => {
          const { faultRuleAdmin, sandboxOnly } = await onTheDatabase();
          await sandboxOnly(db, config);
          return faultRuleAdmin.list(db);
        },
      });
      if (rules.length === 0) return print('No fault rules');
      for (const rule of rules) print(ruleLine(rule));
      return;
    }
    case 'clear': {
      const id = rest[0];
      if (id !== undefined && !/^[1-9][0-9]{0,8}$/.test(id))
        throw new UsageError(`clear takes a rule's id (a number, as faults list shows), got "${id}"`);
      const { removed } = await administer<{ removed: number }>(config, 'faults', {
        remote: (server) => adminCall(server, 'DELETE', id === undefined ? '/admin/faults' : `/admin/faults/${id}`),
        local: async ({ database: { db } }) => {
          const { faultRuleAdmin, sandboxOnly } = await onTheDatabase();
          await sandboxOnly(db, config);
          return id === undefined ? faultRuleAdmin.clear(db) : faultRuleAdmin.remove(db, Number(id));
        },
      });
      print(id === undefined ? `Removed ${removed} fault rule${removed === 1 ? '' : 's'}` : `Removed fault rule ${id}`);
      return;
    }
    case 'enable':
    case 'disable': {
      const request = { enabled: action === 'enable' };
      const { enabled } = await administer<{ enabled: boolean }>(config, 'faults', {
        remote: (server) => adminCall(server, 'PUT', '/admin/faults/injection', request),
        local: async ({ database: { db } }) => {
          const { faultInjection } = await onTheDatabase();
          await faultInjection.set(db, request.enabled);
          return request;
        },
      });
      print(
        enabled
          ? 'Fault injection is on: fault rules and the X-Coregate-Fault header apply on every worker within a second'
          : 'Fault injection is off: the header is refused and no fault rule applies (the rules are kept)',
      );
      return;
    }
    default:
      throw new UsageError(`Unknown faults action "${action}"\n\n${FAULTS.usage}`);
  }
}
