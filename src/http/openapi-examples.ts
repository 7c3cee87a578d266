/**
 * The examples of the reference: for every operation a request that succeeds on the demo dataset (its
 * values from the generator, src/seed/demo-requests.ts) and the answer the demo dataset gives to it,
 * recorded by `npm run openapi:answers` (scripts/openapi-answers.ts) into demo-answers.json and checked
 * against the server by test/contract.test.ts.
 */
import type { CredentialKind, CredentialsBody } from '../contract/envelope.js';
import { Problem, problemBody, type ProblemBody, type ProblemCode } from '../contract/problems.js';
import type { AnyOperation } from '../operations/types.js';
import { demoRequest } from '../seed/demo-requests.js';
import { DEMO_USER, demoExamples, type DemoExamples } from '../seed/examples.js';
import { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED } from '../seed/load.js';
import demoAnswers from '../generated/demo-answers.json' with { type: 'json' };
import { PROBLEM_EXAMPLE_DETAILS } from './operation-problems.js';

/**
 * What an example shows in place of a secret: the reference is read without a token, so it holds none
 * (/docs fills the demo's passwords in as it sends a call: api-reference.ts).
 */
export const PLACEHOLDER = {
  adminPassword: '<admin password>',
  userPassword: '<user password>',
  tokenId: '<TokenId from logon>',
} as const;

/** The user number of the session examples: the demo set-up's user (or one `coregate user add --number 1` creates). */
export const EXAMPLE_USER_NUMBER = DEMO_USER.userNumber;

/**
 * The credentials of an operation's example: the administrative password wherever it is accepted; the
 * session calls, which take one kind of their own, sign on as the demo user (logon) or end the session of
 * the TokenId that logon answers (logoff).
 */
function exampleCredentials(accepted: readonly CredentialKind[]): CredentialsBody {
  if (accepted.includes('AdministrativeCredentials'))
    return { AdministrativeCredentials: { Password: PLACEHOLDER.adminPassword } };
  if (accepted.includes('UserNumberCredentials'))
    return { UserNumberCredentials: { UserNumber: EXAMPLE_USER_NUMBER, Password: PLACEHOLDER.userPassword } };
  if (accepted.includes('TokenCredentials')) return { TokenCredentials: { TokenId: PLACEHOLDER.tokenId } };
  throw new Error(`no example credentials among ${accepted.join(', ')}`);
}

let examples: DemoExamples | undefined;

/**
 * The demo dataset's example values, computed once when the reference is first asked for. The collateral
 * reads name the collateral with a short history: a whole tree of account 1's would list a thousand rows.
 */
function demoDataset(): DemoExamples {
  if (!examples) {
    const all = demoExamples(DEFAULT_SEED, DEFAULT_DEMO_ACCOUNTS);
    examples = { ...all, collateral: all.shortCollateral };
  }
  return examples;
}

/**
 * The body of a request of `operation` that succeeds on the demo dataset, its secrets placeholders.
 * @example requestExample(findBySSN, ['AdministrativeCredentials']) // { Credentials: { AdministrativeCredentials: { Password: '<admin password>' } }, SSN: '…' }
 */
export function requestExample(operation: AnyOperation, accepted: readonly CredentialKind[]): Record<string, unknown> {
  const body = demoRequest(demoDataset(), operation);
  if (body.SelectableFields !== undefined) body.SelectableFields = exampleSelection(body.SelectableFields);
  return { Credentials: exampleCredentials(accepted), ...body };
}

/**
 * The fields a read's example selects, by record type: those a reader looks at first, which the demo dataset
 * fills. The demo's requests select every field (`IncludeAll<X>Fields`), which the suites that send them
 * want; in the reference that made each answer a page of nulls, written out at every read (most of the
 * document's bytes), where a few fields show what selection does.
 */
const EXAMPLE_FIELDS: Readonly<Record<string, readonly string[]>> = {
  Share: ['Id', 'Type', 'Description', 'Balance', 'AvailableBalance', 'OpenDate'],
  ShareAnalysis: ['Locator', 'Plan', 'StatementGroup', 'StatementDate'],
  ShareAnalysisGroup: ['Locator', 'Comment1'],
  ShareAnalysisPlan: ['Locator', 'Plan', 'Description', 'EffectiveDate'],
  ShareCheckOrder: ['Locator', 'Quantity', 'StartNumber', 'LastOrderDate'],
  ShareHold: ['Locator', 'Type', 'Amount', 'Reference1', 'ExpirationDate'],
  ShareNote: ['Locator', 'Code', 'Text'],
  ShareTransfer: ['Locator', 'Type', 'Amount', 'Frequency', 'NextDate'],
  ShareName: ['Locator', 'Type', 'First', 'Last', 'City'],
  ShareTracking: ['Locator', 'Type', 'TrackingCode', 'CreationDate'],
  Collateral: ['Number', 'Type', 'Description', 'CollateralOwner', 'Value'],
  CollateralCollHold: ['Locator', 'AccountNumber', 'Amount', 'EffectiveDate'],
  CollateralDocument: ['Locator', 'Type', 'Number', 'Description', 'Location'],
  CollateralDocumentTracking: ['Locator', 'Type', 'TrackingCode', 'CreationDate'],
  CollateralFmHistory: ['RecordName', 'FieldName', 'FmType', 'PostDate'],
  CollateralTracking: ['Locator', 'Type', 'TrackingCode', 'CreationDate'],
  CorpTransfer: ['Type', 'Status', 'Amount', 'FromAccount', 'ToAccount', 'EffectiveDate'],
};

/** The example's `SelectableFields` in place of the demo request's `{ IncludeAll<X>Fields: true }`. */
function exampleSelection(selectable: unknown): Record<string, unknown> {
  const includeAll = Object.keys(selectable as Record<string, unknown>).find((name) =>
    /^IncludeAll\w+Fields$/.test(name),
  );
  const record = includeAll?.replace(/^IncludeAll/, '').replace(/Fields$/, '');
  const fields = record === undefined ? undefined : EXAMPLE_FIELDS[record];
  if (!fields) throw new Error(`no example fields for the selection ${JSON.stringify(selectable)}`);
  return { [`${record}Fields`]: Object.fromEntries(fields.map((field) => [field, true])) };
}

/** The key of an operation's recorded answer: its family and name, as the audit trail names it. */
export const answerKey = (operation: Pick<AnyOperation, 'family' | 'name'>): string =>
  `${operation.family}:${operation.name}`;

/** The answer the demo dataset gives to an operation's example request, when it was recorded. */
export function recordedAnswer(operation: AnyOperation): unknown {
  return (demoAnswers as Readonly<Record<string, unknown>>)[answerKey(operation)];
}

/** A problem body of `code` as a call is answered with it (without `instance`, the path of the call). */
export function problemExample(status: number, code: ProblemCode): ProblemBody {
  const problem = new Problem(status, code, '');
  return problemBody(new Problem(status, code, PROBLEM_EXAMPLE_DETAILS[code] ?? problem.title));
}
