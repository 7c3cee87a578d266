/**
 * How a SymXchange core's Client fault becomes a problem the caller can act on (gateway mode): a table of
 * rules on the fault's class (or a refinement of it, `Client.Authentication`), its SymXchange status code
 * and its text, the first that matches deciding. No public source gives a Symitar status code a meaning, so
 * the defaults read the core's words, and conservatively: a refusal of the credentials is 403
 * CORE_CREDENTIALS_REJECTED, a missing member, account, share, loan, collateral or record 404
 * RECORD_NOT_FOUND, anything else stays 502 CORE_ERROR (docs/symxchange.md, "Errors and faults"). Operators
 * put rules for their own core's codes and words ahead of the defaults (COREGATE_SYMXCHANGE_FAULT_RULES).
 * A Server fault never reaches a rule: it is never the caller's to fix. The core's text only picks the
 * problem; the caller gets its code, a fixed message and `core: {faultcode, code}`.
 * (Not the sandbox's fault rules of contract/fault-rules.ts, which make a failure on purpose.)
 */
import { readFileSync } from 'node:fs';
import { createContext, Script, type Context } from 'node:vm';
import { Problem, type CoreFaultDetail } from '../contract/problems.js';
import type { Fault } from '../symxchange/faults.js';

/** What a rule may answer a core's Client fault with, and what the caller is told: a fixed message, not the core's. */
export const REFUSAL_PROBLEMS = {
  CORE_CREDENTIALS_REJECTED: { status: 403, detail: 'The core rejected the credentials' },
  RECORD_NOT_FOUND: { status: 404, detail: 'The core has no such record' },
  VALIDATION_FAILED: { status: 400, detail: 'The core refused the request as not valid' },
  CORE_ERROR: { status: 502, detail: 'The core refused the call' },
} as const;
export type RefusalCode = keyof typeof REFUSAL_PROBLEMS;
const REFUSAL_CODES = Object.keys(REFUSAL_PROBLEMS) as RefusalCode[];

/**
 * The problem of a core's refusal, carrying the fault's class and code.
 * @example refusalProblem('RECORD_NOT_FOUND', { faultcode: 'Client' }).status // 404
 */
export function refusalProblem(code: RefusalCode, core: CoreFaultDetail): Problem {
  const { status, detail } = REFUSAL_PROBLEMS[code];
  return new Problem(status, code, detail, undefined, {}, core);
}

/** One rule: what a Client fault must be to match it, and the problem it then gives. */
export interface CoreFaultRule {
  /** How the log and the audit trail name it: `default:<name>`, or the operator's `rule:<name>` (`rule:<index>`). */
  readonly label: string;
  /** `Client`, or a refinement of it (`Client.Authentication`) that the fault's code is or refines further. */
  readonly faultcode: string;
  /** The SymXchange status code the fault must carry. */
  readonly statusCode?: number;
  /** Case-insensitive, on the fault's text: its faultstring and its detail's text, each on lines of their own. */
  readonly pattern?: RegExp;
  readonly problem: RefusalCode;
}

/** The bounds of an operator's rules file. */
export const CORE_FAULT_RULE_LIMITS = {
  rules: 200,
  fileBytes: 256 * 1024,
  patternLength: 200,
  nameLength: 40,
  /** `Client.` and a refinement as long as a fault's is kept (symxchange/faults.ts). */
  faultcodeLength: 'Client.'.length + 64,
  /**
   * How long matching the whole table against one fault's text may take; past it no rule matched (CORE_ERROR,
   * the safe answer). Matching takes microseconds: the bound is for a pattern that backtracks on a text made
   * for it, and leaves room for a loaded host, where the watchdog's own thread may wait for a CPU.
   */
  matchMs: 500,
} as const;

/** The setting naming the operator's rules file. */
export const FAULT_RULES_SETTING = 'COREGATE_SYMXCHANGE_FAULT_RULES';

/** A pattern that cannot be used as written: the reason, for the start's one line. */
class PatternRefused extends Error {}

/**
 * A rule's pattern compiled, case-insensitive, `^` and `$` at each line. Refused when it could backtrack
 * without end on a text made for it (a core's text may quote what the caller sent): a back-reference, a
 * lookaround, or a group repeated by anything but `?`. The table's matching has a time bound besides.
 * @example compilePattern('^member not found').test('Invalid parameters\nMember not found') // true
 */
export function compilePattern(source: string): RegExp {
  if (source.length === 0 || source.length > CORE_FAULT_RULE_LIMITS.patternLength)
    throw new PatternRefused(`must be 1 to ${CORE_FAULT_RULE_LIMITS.patternLength} characters`);
  let pattern: RegExp;
  try {
    pattern = new RegExp(source, 'imu');
  } catch (error) {
    throw new PatternRefused(`is not a regular expression (${(error as Error).message})`);
  }
  checkBacktracking(source);
  return pattern;
}

/** Throws for the constructs that make a regular expression backtrack without end (the source compiles). */
function checkBacktracking(source: string): void {
  let inClass = false;
  for (let at = 0; at < source.length; at += 1) {
    const char = source[at]!;
    if (char === '\\') {
      const next = source[at + 1] ?? '';
      if (!inClass && (/[1-9]/.test(next) || next === 'k'))
        throw new PatternRefused('holds a back-reference, which can backtrack without end');
      at += 1;
    } else if (inClass) {
      if (char === ']') inClass = false;
    } else if (char === '[') {
      inClass = true;
    } else if (char === '(' && /^\(\?<?[=!]/.test(source.slice(at, at + 4))) {
      throw new PatternRefused('holds a lookaround, which can hide a repetition');
    } else if (char === ')' && /^[*+{]/.test(source[at + 1] ?? '')) {
      throw new PatternRefused(
        'repeats a group, which can backtrack without end: repeat single characters or classes (a group may take ?)',
      );
    }
  }
}

/** A rule as written in the table, its pattern still a string. */
interface WrittenRule {
  readonly faultcode: string;
  readonly statusCode?: number;
  readonly pattern?: string;
  readonly problem: RefusalCode;
}

/** Record kinds a core's words may name as missing: coregate's records, and the member they belong to. */
const RECORD_NOUN = '(?:member|account|share|loan|collateral|record)';

/**
 * Where a sentence starts: the core's words are read from there, never from inside another's (a database's
 * "relation share does not exist").
 */
const SENTENCE = String.raw`(?:^|[.:;]\s)\s*`;

/**
 * The defaults, for the refusals a Symitar core gives in words, each saying one thing unambiguously. A
 * refusal of credentials ("Invalid password", "Authentication failed", "Access is denied"), never of a token
 * alone (a paging token is no credential). A missing member, account, share, loan, collateral or record said
 * where a sentence starts ("Member not found", the public WireMock stub's detail; "Account 0000000042 does
 * not exist"), never "not found" alone or of anything else (an operation, a paging token, a user, a file).
 * Credentials come first: a core refusing them says nothing sure about the record.
 */
const DEFAULT_RULES: Readonly<Record<string, WrittenRule>> = {
  // SOAP 1.1 (4.4.1) refines a fault code with dots; its own example is Client.Authentication.
  'authentication-fault': { faultcode: 'Client.Authentication', problem: 'CORE_CREDENTIALS_REJECTED' },
  'invalid-credentials': {
    faultcode: 'Client',
    pattern: String.raw`\b(?:invalid|incorrect|wrong|bad)\s+(?:credentials?|password|passcode|pin|token\s*id|user\s*(?:name|id|number)?\s*(?:or|and|/)\s*password)\b`,
    problem: 'CORE_CREDENTIALS_REJECTED',
  },
  'authentication-failed': {
    faultcode: 'Client',
    pattern: String.raw`\b(?:authentication|verification|logon|login)\s+(?:has\s+)?(?:failed|failure|denied|rejected|refused)\b`,
    problem: 'CORE_CREDENTIALS_REJECTED',
  },
  'credentials-rejected': {
    faultcode: 'Client',
    pattern: String.raw`\b(?:credentials?|password|passcode|pin|token\s*id)\s+(?:(?:is|are|was|were|has|have)\s+)?(?:been\s+)?(?:rejected|refused|expired|invalid|incorrect|not\s+(?:valid|accepted))\b`,
    problem: 'CORE_CREDENTIALS_REJECTED',
  },
  'access-denied': {
    faultcode: 'Client',
    pattern: String.raw`\baccess\s+(?:is\s+)?denied\b`,
    problem: 'CORE_CREDENTIALS_REJECTED',
  },
  'record-not-found': {
    faultcode: 'Client',
    pattern: String.raw`${SENTENCE}(?:the\s+)?${RECORD_NOUN}(?:\s+record)?(?:\s+#?[\w-]*\d[\w-]*)?\s+(?:(?:was|is)\s+)?(?:(?:could\s+)?not\s+(?:be\s+)?found|does\s+not\s+exist)\b`,
    problem: 'RECORD_NOT_FOUND',
  },
  'no-such-record': {
    faultcode: 'Client',
    pattern: String.raw`${SENTENCE}no\s+(?:such\s+${RECORD_NOUN}|${RECORD_NOUN}(?:\s+record)?\s+(?:was\s+)?found)\b`,
    problem: 'RECORD_NOT_FOUND',
  },
  'could-not-find-record': {
    faultcode: 'Client',
    pattern: String.raw`${SENTENCE}(?:could\s+not|cannot|unable\s+to)\s+find\s+(?:the\s+|an?\s+)?${RECORD_NOUN}\b`,
    problem: 'RECORD_NOT_FOUND',
  },
};

const DEFAULTS: readonly CoreFaultRule[] = Object.entries(DEFAULT_RULES).map(([name, rule]) => ({
  label: `default:${name}`,
  faultcode: rule.faultcode,
  ...(rule.statusCode === undefined ? {} : { statusCode: rule.statusCode }),
  ...(rule.pattern === undefined ? {} : { pattern: compilePattern(rule.pattern) }),
  problem: rule.problem,
}));

/** What the table is given when matching takes longer than its bound: no rule, said so in the log and audit. */
const TOO_SLOW: CoreFaultRule = { label: 'rules-timed-out', faultcode: 'Client', problem: 'CORE_ERROR' };

/** Finds the first pattern matching (a rule without one matches), within the time bound (vm's watchdog). */
const FIRST_MATCHING = new Script('patterns.findIndex((pattern) => pattern === null || pattern.test(text))');

/** Whether a fault's code is the rule's or refines it (`Client.Authentication.Expired`, `Client.Authentication`). */
function refines(fault: Fault, faultcode: string): boolean {
  const written = fault.refinement === undefined ? fault.faultCode : `${fault.faultCode}.${fault.refinement}`;
  return written === faultcode || written.startsWith(`${faultcode}.`);
}

/**
 * The rules of a gateway: the operator's, then the defaults.
 * @example new CoreFaultRules().match({ faultCode: 'Client', text: { faultString: 'Invalid parameters', detail: 'Member not found' } })?.label // 'default:record-not-found'
 */
export class CoreFaultRules {
  readonly rules: readonly CoreFaultRule[];
  /** Where the patterns run under the watchdog: made on the first fault that needs it (it takes milliseconds). */
  private matching: Context | undefined;

  constructor(operatorRules: readonly CoreFaultRule[] = []) {
    this.rules = [...operatorRules, ...DEFAULTS];
  }

  /** The first rule a Client fault matches; none for another class or when none does. */
  match(fault: Fault): CoreFaultRule | undefined {
    if (fault.faultCode !== 'Client') return undefined;
    const candidates = this.rules.filter(
      (rule) =>
        refines(fault, rule.faultcode) && (rule.statusCode === undefined || rule.statusCode === fault.statusCode),
    );
    if (candidates.length === 0) return undefined;
    // The text is already clipped (faults.ts); the watchdog bounds what no check of a pattern can.
    const matching = (this.matching ??= createContext());
    matching.patterns = candidates.map((rule) => rule.pattern ?? null);
    matching.text = `${fault.text.faultString}\n${fault.text.detail ?? ''}`;
    try {
      const index = FIRST_MATCHING.runInContext(matching, { timeout: CORE_FAULT_RULE_LIMITS.matchMs }) as number;
      return candidates[index];
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return TOO_SLOW;
      throw error;
    } finally {
      matching.text = '';
    }
  }
}

/** The defaults alone: a gateway's rules without an operator's file. */
export const DEFAULT_CORE_FAULT_RULES = new CoreFaultRules();

/** The rules of the operator's file (COREGATE_SYMXCHANGE_FAULT_RULES), then the defaults; without one, the defaults. */
export function coreFaultRules(file: string | undefined): CoreFaultRules {
  return file === undefined ? DEFAULT_CORE_FAULT_RULES : new CoreFaultRules(readCoreFaultRules(file));
}

/**
 * What a file's rule at fault is told with: one line naming the setting, the file and the field's JSON pointer
 * (what it quotes, a parser's message or a pattern, is kept to that one line).
 */
class RulesFileError extends Error {
  constructor(file: string, message: string) {
    super(`${FAULT_RULES_SETTING} (${file}): ${message.replace(/\s+/g, ' ')}`);
    this.name = 'RulesFileError';
  }
}

const isXsdInt = (value: unknown): value is number =>
  Number.isInteger(value) && (value as number) >= -(2 ** 31) && (value as number) < 2 ** 31;

const FIELDS = new Set(['name', 'faultcode', 'statusCode', 'pattern', 'problem']);
const NAME = new RegExp(`^[A-Za-z][A-Za-z0-9_.-]{0,${CORE_FAULT_RULE_LIMITS.nameLength - 1}}$`);
const FAULTCODE = /^Client(?:\.[A-Za-z0-9_-]+)*$/;

/**
 * The operator's rules: a JSON array of `{name?, faultcode, statusCode?, pattern?, problem}`, checked whole;
 * throws one line naming the setting, the file and what is wrong where (`/3/pattern`).
 * @example readCoreFaultRules('/etc/coregate/fault-rules.json')[0]?.label // 'rule:member-gone'
 */
export function readCoreFaultRules(file: string): CoreFaultRule[] {
  let text: string;
  try {
    const bytes = readFileSync(file);
    if (bytes.length > CORE_FAULT_RULE_LIMITS.fileBytes)
      throw new RulesFileError(file, `the file is larger than ${CORE_FAULT_RULE_LIMITS.fileBytes} bytes`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof RulesFileError) throw error;
    throw new Error(
      `${FAULT_RULES_SETTING}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
    );
  }
  let written: unknown;
  try {
    written = JSON.parse(text);
  } catch (error) {
    throw new RulesFileError(file, `not JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(written)) throw new RulesFileError(file, 'must hold a JSON array of rules');
  if (written.length > CORE_FAULT_RULE_LIMITS.rules)
    throw new RulesFileError(file, `holds ${written.length} rules; at most ${CORE_FAULT_RULE_LIMITS.rules}`);
  const names = new Set<string>();
  return written.map((entry: unknown, index) => {
    const at = (field?: string) => (field === undefined ? `/${index}` : `/${index}/${field}`);
    const refuse = (field: string | undefined, message: string) => new RulesFileError(file, `${at(field)}: ${message}`);
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      throw refuse(undefined, 'a rule is an object');
    const rule = entry as Record<string, unknown>;
    const unknown = Object.keys(rule).find((field) => !FIELDS.has(field));
    if (unknown !== undefined)
      throw refuse(unknown, `not a field of a rule (${[...FIELDS].join(', ')}; unknown fields are refused)`);

    const { name, faultcode, statusCode, pattern, problem } = rule;
    if (name !== undefined) {
      if (typeof name !== 'string' || !NAME.test(name))
        throw refuse('name', `a letter, then letters, digits, . _ or -, at most ${CORE_FAULT_RULE_LIMITS.nameLength}`);
      if (names.has(name)) throw refuse('name', `"${name}" names an earlier rule too`);
      names.add(name);
    }
    if (
      typeof faultcode !== 'string' ||
      faultcode.length > CORE_FAULT_RULE_LIMITS.faultcodeLength ||
      !FAULTCODE.test(faultcode)
    )
      throw refuse(
        'faultcode',
        'must be "Client" or a refinement of it ("Client.Authentication"): a Server fault is never the caller\'s to fix',
      );
    if (statusCode !== undefined && !isXsdInt(statusCode))
      throw refuse('statusCode', 'a SymXchange status code is an integer (xsd:int)');
    let compiled: RegExp | undefined;
    if (pattern !== undefined) {
      if (typeof pattern !== 'string') throw refuse('pattern', 'a regular expression, as a string');
      try {
        compiled = compilePattern(pattern);
      } catch (error) {
        if (error instanceof PatternRefused) throw refuse('pattern', error.message);
        throw error;
      }
    }
    if (typeof problem !== 'string' || !REFUSAL_CODES.includes(problem as RefusalCode))
      throw refuse('problem', `must be one of ${REFUSAL_CODES.join(', ')}`);
    if (problem !== 'CORE_ERROR' && statusCode === undefined && pattern === undefined && faultcode === 'Client')
      throw refuse(
        undefined,
        `would make every Client fault ${problem}: give it a statusCode, a pattern or a refined faultcode (only CORE_ERROR may take them all)`,
      );
    return {
      label: `rule:${name ?? index}`,
      faultcode,
      ...(statusCode === undefined ? {} : { statusCode }),
      ...(compiled === undefined ? {} : { pattern: compiled }),
      problem: problem as RefusalCode,
    };
  });
}
