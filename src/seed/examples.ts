/**
 * Values a newcomer can try against the demo dataset, computed from the generator alone (no database):
 * for every lookup a value that finds something and one that finds nothing, plus targets for share
 * updates, the corporate transfer and the collateral operations. `renderDemoDataDoc` turns them into
 * docs/demo-data.md; test/seed.test.ts checks both against a seeded database.
 */
import type { WireRecord } from '../store/records.js';
import { DEMO_MEMBER_ACCOUNTS, demoMemberSecret } from './member-secrets.js';
import {
  CARD_STATUS,
  DATASET_AS_OF,
  LOOKUP_KINDS,
  accountNumberOf,
  generateAccount,
  luhnCheckDigit,
  type AccountBundle,
  type SeededRecordName,
} from './generate.js';

/** Examples come from the first accounts where possible, so they exist in any dataset of that size. */
const PREFERRED_ACCOUNTS = 50;
/** The active-card example expires late, so it stays active for years after this doc is written. */
const ACTIVE_EXAMPLE_EXPIRES_AFTER = '2030-01-01';

/** The lookup result object of findByMICR and findByLookup. */
export interface LookupResult {
  readonly AccountNumber: string;
  readonly IdType: 'SHARE' | 'NONE';
  readonly Id: string | null;
}

export interface CardExample {
  readonly cardNumber: string;
  readonly accountNumber: string;
  readonly status: number;
  readonly expirationDate: string;
}

export interface LookupExample {
  readonly lookupType: number;
  readonly lookupNumber: string;
  readonly label: string;
  readonly result: LookupResult;
}

/** One share sub-record that an update operation can target. */
export interface ShareTarget {
  readonly record: SeededRecordName;
  readonly accountNumber: string;
  readonly shareId: string;
  readonly locator: number;
}

export interface DemoExamples {
  readonly seed: number;
  readonly accounts: number;
  readonly asOf: string;
  /** Status 0, not expired: findByActiveCard and findByAnyCard find it. */
  readonly activeCard: CardExample;
  /** Status 1 (inactive): findByActiveCard returns null, findByAnyCard the account. */
  readonly inactiveCard: CardExample;
  /** Status 0 but expired: findByActiveCard returns null, findByAnyCard the account. */
  readonly expiredCard: CardExample;
  /** One number on two accounts: inactive on one, active on the other. */
  readonly reissuedCard: {
    readonly cardNumber: string;
    readonly activeAccountNumber: string;
    readonly accountNumbers: readonly string[];
  };
  readonly homeBankingUser: { readonly userName: string; readonly accountNumber: string };
  readonly micr: { readonly micrNumber: string; readonly draft: string; readonly result: LookupResult };
  readonly lookupWithShare: LookupExample;
  readonly lookupWithoutShare: LookupExample;
  /** An SSN on the name records of several accounts (a joint owner who is a member too). */
  readonly sharedSsn: { readonly ssn: string; readonly accountNumbers: readonly string[] };
  /** The short name among the first accounts' names that matches the most accounts of the dataset. */
  readonly shortName: { readonly shortName: string; readonly accountNumbers: readonly string[] };
  readonly corpTransfer: {
    readonly globalSequenceDate: string;
    readonly globalSequence: number;
    readonly fromAccount: string;
    readonly amount: number;
  };
  readonly collateral: {
    readonly collateralNumber: string;
    readonly accountNumber: string;
    readonly description: string;
    readonly holds: number;
    readonly documents: number;
    readonly fmHistory: number;
    readonly trackings: number;
    /** A document with tracking records, and one of them. */
    readonly documentLocator: number;
    readonly documentTrackings: number;
    readonly documentTrackingLocator: number;
  };
  /** One record of each share sub-record type (and a share), on the first account that has them all. */
  readonly shareTargets: readonly ShareTarget[];
  readonly noMatch: {
    readonly accountNumber: string;
    readonly cardNumber: string;
    readonly homeBankingUserName: string;
    readonly micrNumber: string;
    readonly draft: string;
    readonly lookupType: number;
    readonly lookupNumber: string;
    readonly ssn: string;
    readonly shortName: string;
    readonly globalSequenceDate: string;
    readonly globalSequence: number;
    readonly collateralNumber: string;
  };
}

const SHARE_TARGET_RECORDS = [
  'ShareHold',
  'ShareNote',
  'ShareAnalysis',
  'ShareAnalysisGroup',
  'ShareAnalysisPlan',
  'ShareCheckOrder',
  'ShareTransfer',
  'ShareName',
  'ShareTracking',
] as const satisfies readonly SeededRecordName[];

const text = (values: WireRecord, field: string): string => String(values[field]);
const num = (values: WireRecord, field: string): number => Number(values[field]);

/** Every account number that carries a value, in ascending order, from a value → accounts index. */
function accountsOf(index: ReadonlyMap<string, Set<string>>, value: string): string[] {
  return [...(index.get(value) ?? [])].sort();
}

function addTo(index: Map<string, Set<string>>, value: string, accountNumber: string): void {
  const accounts = index.get(value) ?? new Set<string>();
  accounts.add(accountNumber);
  index.set(value, accounts);
}

/** The first value `choose` accepts, in account order; throws when the dataset has none. */
function firstFrom<T>(
  bundles: readonly AccountBundle[],
  what: string,
  choose: (bundle: AccountBundle) => T | undefined,
): T {
  for (const bundle of bundles) {
    const chosen = choose(bundle);
    if (chosen !== undefined) return chosen;
  }
  throw new Error(`the dataset has no ${what}; seed more accounts`);
}

/**
 * Example values for the demo dataset of `accounts` accounts generated from `seed`.
 * @example demoExamples(DEFAULT_SEED, DEFAULT_DEMO_ACCOUNTS).activeCard.cardNumber
 */
export function demoExamples(seed: number, accounts: number): DemoExamples {
  // The whole dataset is indexed, so that every "which accounts carry it" answer is exact.
  const bundles: AccountBundle[] = [];
  const cards = new Map<string, { accountNumber: string; values: WireRecord }[]>();
  const ssns = new Map<string, Set<string>>();
  const shortNames = new Map<string, Set<string>>();
  for (let index = 1; index <= accounts; index += 1) {
    const bundle = generateAccount(seed, index);
    bundles.push(bundle);
    const { accountNumber, records } = bundle;
    for (const { values } of records.Card) {
      cards.set(text(values, 'CardNumber'), [
        ...(cards.get(text(values, 'CardNumber')) ?? []),
        { accountNumber, values },
      ]);
    }
    for (const { values } of records.ShareName) {
      addTo(ssns, text(values, 'Ssn'), accountNumber);
      addTo(shortNames, text(values, 'ShortName').toUpperCase(), accountNumber);
    }
  }
  // Lookup examples come from ordinary accounts (2, 3, …), to show lookups reaching across the dataset;
  // account 1, which has every record kind, is the fallback and the target for updates and collateral.
  const ordinary = [...bundles.slice(1), ...bundles.slice(0, 1)];
  const singleCard = (what: string, accepts: (values: WireRecord) => boolean): CardExample =>
    firstFrom(ordinary, what, ({ accountNumber, records }) => {
      const card = records.Card.find(
        ({ values }) => accepts(values) && cards.get(text(values, 'CardNumber'))?.length === 1,
      );
      return card
        ? {
            cardNumber: text(card.values, 'CardNumber'),
            accountNumber,
            status: num(card.values, 'Status'),
            expirationDate: text(card.values, 'ExpirationDate'),
          }
        : undefined;
    });
  const isActive = (values: WireRecord) =>
    num(values, 'Status') === 0 && text(values, 'ExpirationDate') >= DATASET_AS_OF;

  const reissuedCard = firstFrom(ordinary, 'reissued card number', ({ records }) => {
    for (const { values } of records.Card) {
      const holders = cards.get(text(values, 'CardNumber')) ?? [];
      const active = holders.find((holder) => isActive(holder.values));
      if (holders.length < 2 || !active) continue;
      return {
        cardNumber: text(values, 'CardNumber'),
        activeAccountNumber: active.accountNumber,
        accountNumbers: [...new Set(holders.map((holder) => holder.accountNumber))].sort(),
      };
    }
    return undefined;
  });

  const lookupExample = (withShare: boolean): LookupExample =>
    firstFrom(ordinary, withShare ? 'lookup with a share' : 'lookup without a share', ({ accountNumber, records }) => {
      const lookup = records.Lookup.find(({ values }) => (values.ShareId !== undefined) === withShare);
      if (!lookup) return undefined;
      const lookupType = num(lookup.values, 'LookupType');
      return {
        lookupType,
        lookupNumber: text(lookup.values, 'LookupNumber'),
        label: LOOKUP_KINDS.find((kind) => kind.type === lookupType)?.label ?? '',
        result: withShare
          ? { AccountNumber: accountNumber, IdType: 'SHARE', Id: text(lookup.values, 'ShareId') }
          : { AccountNumber: accountNumber, IdType: 'NONE', Id: null },
      };
    });

  const sharedSsn = firstFrom(ordinary, 'SSN on two accounts', ({ records }) => {
    const shared = records.ShareName.find(({ values }) => (ssns.get(text(values, 'Ssn'))?.size ?? 0) >= 2);
    return shared
      ? { ssn: text(shared.values, 'Ssn'), accountNumbers: accountsOf(ssns, text(shared.values, 'Ssn')) }
      : undefined;
  });

  // The most shared short name among the first accounts' names (ties: alphabetical).
  const candidates = bundles
    .slice(0, PREFERRED_ACCOUNTS)
    .flatMap(({ records }) => records.ShareName.map(({ values }) => text(values, 'ShortName').toUpperCase()));
  const sharedBy = (name: string) => shortNames.get(name)?.size ?? 0;
  const [shortName = ''] = [...new Set(candidates)].sort((a, b) => sharedBy(b) - sharedBy(a) || a.localeCompare(b));

  const corpTransfer = firstFrom(ordinary, 'corporate transfer', ({ records }) => {
    const transfer = records.CorpTransfer[0];
    return transfer
      ? {
          globalSequenceDate: text(transfer.values, 'GlobalSequenceDate'),
          globalSequence: num(transfer.values, 'GlobalSequence'),
          fromAccount: text(transfer.values, 'FromAccount'),
          amount: num(transfer.values, 'Amount'),
        }
      : undefined;
  });

  const collateral = firstFrom(bundles, 'collateral with document tracking', ({ accountNumber, records }) => {
    const tracking = records.CollateralDocumentTracking[0];
    if (!tracking) return undefined;
    const collateralNumber = String(tracking.keys.collateral_number);
    const documentLocator = Number(tracking.keys.document_locator);
    const ofCollateral = (name: SeededRecordName) =>
      records[name].filter(({ keys, values }) => (keys.collateral_number ?? values.Number) === collateralNumber);
    const [root] = ofCollateral('Collateral');
    return {
      collateralNumber,
      accountNumber,
      description: root ? text(root.values, 'Description') : '',
      holds: ofCollateral('CollateralCollHold').length,
      documents: ofCollateral('CollateralDocument').length,
      fmHistory: ofCollateral('CollateralFmHistory').length,
      trackings: ofCollateral('CollateralTracking').length,
      documentLocator,
      documentTrackings: ofCollateral('CollateralDocumentTracking').filter(
        ({ keys }) => Number(keys.document_locator) === documentLocator,
      ).length,
      documentTrackingLocator: num(tracking.values, 'Locator'),
    };
  });

  const shareTargets = firstFrom(bundles, 'account with every share sub-record', ({ accountNumber, records }) => {
    const targets: ShareTarget[] = [];
    for (const record of SHARE_TARGET_RECORDS) {
      const target = records[record].find(({ keys }) => typeof keys.share_id === 'string');
      if (!target) return undefined;
      targets.push({
        record,
        accountNumber,
        shareId: String(target.keys.share_id),
        locator: num(target.values, 'Locator'),
      });
    }
    return targets;
  });

  const micr = firstFrom(ordinary, 'MICR number', ({ accountNumber, records }) => {
    const [first] = records.Micr;
    return first
      ? {
          micrNumber: text(first.values, 'MicrNumber'),
          draft: text(first.values, 'Draft'),
          result: { AccountNumber: accountNumber, IdType: 'SHARE', Id: text(first.values, 'ShareId') } as const,
        }
      : undefined;
  });

  const homeBankingUser = firstFrom(ordinary, 'home banking user', ({ accountNumber, records }) => {
    const [user] = records.HomeBankingUser;
    return user ? { userName: text(user.values, 'UserName'), accountNumber } : undefined;
  });

  // Values no generated record can carry, by the generator's formats: card numbers start with one of
  // CARD_BINS, user names have no dots, MICR numbers have 10–12 digits, lookup types are LOOKUP_KINDS,
  // SSN area 666 is never issued, surnames come from a list, GlobalSequence is at least 11 and
  // collateral numbers start with 7.
  const unknownCardPrefix = '400000123456789';
  const noMatch = {
    accountNumber: accountNumberOf(accounts + 1),
    cardNumber: `${unknownCardPrefix}${luhnCheckDigit(unknownCardPrefix)}`,
    homeBankingUserName: 'no.such.user',
    micrNumber: '1234',
    draft: '9',
    lookupType: 99,
    lookupNumber: 'NOTHING-HERE',
    ssn: '666123456',
    shortName: 'NOBODY X',
    globalSequenceDate: '2000-01-01',
    globalSequence: 1,
    collateralNumber: '0000000000',
  };

  return {
    seed,
    accounts,
    asOf: DATASET_AS_OF,
    activeCard: singleCard(
      'active card',
      (values) => isActive(values) && text(values, 'ExpirationDate') >= ACTIVE_EXAMPLE_EXPIRES_AFTER,
    ),
    inactiveCard: singleCard('inactive card', (values) => num(values, 'Status') === CARD_STATUS.inactive),
    expiredCard: singleCard(
      'expired card',
      (values) => num(values, 'Status') === 0 && text(values, 'ExpirationDate') < DATASET_AS_OF,
    ),
    reissuedCard,
    homeBankingUser,
    micr,
    lookupWithShare: lookupExample(true),
    lookupWithoutShare: lookupExample(false),
    sharedSsn,
    shortName: { shortName, accountNumbers: accountsOf(shortNames, shortName) },
    corpTransfer,
    collateral,
    shareTargets,
    noMatch,
  };
}

// ---------------------------------------------------------------------------------------------------
// docs/demo-data.md
// ---------------------------------------------------------------------------------------------------

const BASE_URL = 'http://localhost:8627';
const P1 = '/gw/627/persistent';
const P2 = '/gw/627/2022.01';
/** Stands for the password in a body; replaced by a shell splice of $ADMIN_PASSWORD. */
const PASSWORD_SLOT = '@ADMIN_PASSWORD@';

/** JSON on one line with a space after ':' and ',', as people write it by hand. */
function inlineJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inlineJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([key, entry]) => `${JSON.stringify(key)}: ${inlineJson(entry)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}

const code = (value: unknown) => `\`${typeof value === 'string' ? value : inlineJson(value)}\``;

/** A ready-to-paste curl call: the body's password is spliced in from $ADMIN_PASSWORD by the shell. */
function curl(path: string, fields: Record<string, unknown>): string {
  const body = inlineJson({ Credentials: { AdministrativeCredentials: { Password: PASSWORD_SLOT } }, ...fields });
  return [
    '```sh',
    `curl -s ${BASE_URL}${path} \\`,
    `  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\`,
    `  -d '${body.replace(`"${PASSWORD_SLOT}"`, `"'"$ADMIN_PASSWORD"'"`)}'`,
    '```',
  ].join('\n');
}

/** A Markdown table with padded columns, as Prettier formats it, so `npm run format` leaves the page alone. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((_title, column) =>
    Math.max(3, ...[header, ...rows].map((row) => [...(row[column] ?? '')].length)),
  );
  const line = (cells: readonly string[]) =>
    `| ${widths.map((width, column) => (cells[column] ?? '').padEnd(width)).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

const cardLabel = (card: CardExample, what: string) =>
  `${what} (Status ${card.status}, expires ${card.expirationDate}) on ${card.accountNumber}`;

/**
 * The "values you can try" page for a newcomer; `npm run demo-data:doc` writes it to docs/demo-data.md.
 * @example renderDemoDataDoc(demoExamples(DEFAULT_SEED, DEFAULT_DEMO_ACCOUNTS))
 */
export function renderDemoDataDoc(examples: DemoExamples): string {
  const { activeCard, inactiveCard, expiredCard, reissuedCard, noMatch, collateral } = examples;
  const inactiveAccount = reissuedCard.accountNumbers.find((account) => account !== reissuedCard.activeAccountNumber);
  const [holdTarget] = examples.shareTargets;
  const lastAccount = accountNumberOf(examples.accounts);
  const sections = [
    `# Demo data: values you can try

<!-- Generated by \`npm run demo-data:doc\` (scripts/demo-data-doc.ts) from src/seed/examples.ts; do not edit. -->

On its first run \`npm start\` seeds the embedded database with ${examples.accounts.toLocaleString('en-US')} accounts
(${accountNumberOf(1)} to ${lastAccount}) generated from seed ${examples.seed}. The data is deterministic: every machine gets
the same accounts, names, cards and numbers, so the values below work everywhere. They are computed from the generator
(\`src/seed/generate.ts\`) and test/seed.test.ts checks them against a seeded database. The people, card numbers, SSNs
and addresses are fictional; phone numbers use the reserved 555-01xx range and e-mail addresses the example.* domains.

The dataset describes the credit union as of ${examples.asOf}. Account ${accountNumberOf(1)} carries one record of every
kind (shares with every sub-record, cards, home banking, MICR, lookups, a corporate transfer, a collateral), so it is a
good first target.

\`npm start\` prints a demo API token and the admin password (also written to \`./data\`). Export them first:

\`\`\`sh
export TOKEN='<demo API token>'
export ADMIN_PASSWORD='<admin password>'
\`\`\`

Every call is a POST with a JSON body holding \`Credentials\` and the request fields, and the header
\`Authorization: Bearer $TOKEN\`. Responses also carry \`MessageId\` (the operation name), and \`Version_1\` /
\`_value_1\` where the spec shows them; the tables below show the fields that answer the question.`,

    `## Cards: findByActiveCard and findByAnyCard

A card is active when its Status is 0 and its ExpirationDate is today or later. findByActiveCard returns one account
or null; findByAnyCard returns every account that has the number, in any status.

${table(
  ['CardNumber', 'What it is', 'findByActiveCard → AccountNumber', 'findByAnyCard → AccountNumber'],
  [
    [
      code(activeCard.cardNumber),
      cardLabel(activeCard, 'active card'),
      code(activeCard.accountNumber),
      code([activeCard.accountNumber]),
    ],
    [
      code(inactiveCard.cardNumber),
      cardLabel(inactiveCard, 'inactive card'),
      code(null),
      code([inactiveCard.accountNumber]),
    ],
    [
      code(expiredCard.cardNumber),
      cardLabel(expiredCard, 'expired card'),
      code(null),
      code([expiredCard.accountNumber]),
    ],
    [
      code(reissuedCard.cardNumber),
      `reissued: inactive on ${inactiveAccount ?? '?'}, active on ${reissuedCard.activeAccountNumber}`,
      code(reissuedCard.activeAccountNumber),
      code(reissuedCard.accountNumbers),
    ],
    [code(noMatch.cardNumber), 'no such card (Luhn-valid)', code(null), code([])],
  ],
)}

${curl(`${P1}/findby/findByActiveCard`, { CardNumber: activeCard.cardNumber })}

${curl(`${P1}/findby/findByAnyCard`, { CardNumber: reissuedCard.cardNumber })}`,

    `## Home banking: findByHomeUser

${table(
  ['HomeBankingUserName', 'AccountNumber'],
  [
    [code(examples.homeBankingUser.userName), code(examples.homeBankingUser.accountNumber)],
    [code(noMatch.homeBankingUserName), code(null)],
  ],
)}

${curl(`${P1}/findby/findByHomeUser`, { HomeBankingUserName: examples.homeBankingUser.userName })}`,

    `## MICR: findByMICR

The MICR number printed on a member's checks, plus the draft number that selects the checking share.

${table(
  ['MICR', 'Draft', 'Result'],
  [
    [code(examples.micr.micrNumber), code(examples.micr.draft), code(examples.micr.result)],
    [code(noMatch.micrNumber), code(noMatch.draft), 'nothing found'],
  ],
)}

${curl(`${P1}/findby/findByMICR`, { MICR: examples.micr.micrNumber, Draft: examples.micr.draft })}`,

    `## Lookups: findByLookup

Lookup types are the credit union's own (0–99). Some lookups point at a share (IdType \`SHARE\`), some only at the
account (IdType \`NONE\`, Id null). The response carries the Result object and AccountNumber.

${table(
  ['LookupType', 'LookupNumber', 'Meaning', 'Result'],
  [examples.lookupWithShare, examples.lookupWithoutShare]
    .map((lookup) => [code(lookup.lookupType), code(lookup.lookupNumber), lookup.label, code(lookup.result)])
    .concat([[code(noMatch.lookupType), code(noMatch.lookupNumber), 'unused type', 'nothing found']]),
)}

${curl(`${P1}/findby/findByLookup`, { LookupType: examples.lookupWithShare.lookupType, LookupNumber: examples.lookupWithShare.lookupNumber })}`,

    `## Names: findBySSN and findByShortName

Both match every name record, account-level or share-level, and return distinct account numbers in ascending order.
The SSN below belongs to a member who is also the joint owner of another account. Short names are "LAST F"; with 60
common surnames, one short name matches several accounts (the list depends on how many accounts were seeded: this one
is for ${examples.accounts.toLocaleString('en-US')}).

${table(
  ['Request', 'AccountNumber'],
  [
    [`SSN ${code(examples.sharedSsn.ssn)}`, code(examples.sharedSsn.accountNumbers)],
    [`SSN ${code(noMatch.ssn)} (never issued)`, code([])],
    [`ShortName ${code(examples.shortName.shortName)}`, code(examples.shortName.accountNumbers)],
    [`ShortName ${code(noMatch.shortName)}`, code([])],
  ],
)}

${curl(`${P1}/findby/findBySSN`, { SSN: examples.sharedSsn.ssn })}

${curl(`${P1}/findby/findByShortName`, { ShortName: examples.shortName.shortName })}`,

    `## Corporate transfer: getCorpTransferSelectFields

A transfer is identified by GlobalSequenceDate plus GlobalSequence; both are required.

${table(
  ['CorpTransferGlobalSequenceDate', 'CorpTransferGlobalSequence', 'Found'],
  [
    [
      code(examples.corpTransfer.globalSequenceDate),
      code(examples.corpTransfer.globalSequence),
      `a transfer of ${examples.corpTransfer.amount.toFixed(2)} from account ${examples.corpTransfer.fromAccount}`,
    ],
    [code(noMatch.globalSequenceDate), code(noMatch.globalSequence), 'no such transfer'],
  ],
)}

${curl(`${P1}/corptransfer/getCorpTransferSelectFields`, {
  CorpTransferGlobalSequenceDate: examples.corpTransfer.globalSequenceDate,
  CorpTransferGlobalSequence: examples.corpTransfer.globalSequence,
  SelectableFields: { IncludeAllCorpTransferFields: true },
})}`,

    `## Share updates: records to update

Share sub-records are identified by AccountNumber, ShareId and their locator. Every account has a primary savings share
\`0000\` with at least one hold and one note. Account ${noMatch.accountNumber} does not exist.

${table(
  ['Operation', 'AccountNumber', 'ShareId', 'Locator'],
  [
    [`updateShareByID`, code(holdTarget?.accountNumber ?? ''), code(holdTarget?.shareId ?? ''), 'none'],
    ...examples.shareTargets.map((target) => [
      `update${target.record}ByID`,
      code(target.accountNumber),
      code(target.shareId),
      `${target.record}Locator ${code(target.locator)}`,
    ]),
  ],
)}

${
  holdTarget
    ? curl(`${P1}/account/updateShareHoldByID`, {
        AccountNumber: holdTarget.accountNumber,
        ShareId: holdTarget.shareId,
        ShareHoldLocator: holdTarget.locator,
        ShareHoldFields: { Reference1: 'DEMO UPDATE' },
      })
    : ''
}`,

    `## Collateral (2022.01 paths only)

${table(
  ['Request field', 'Value', 'What it names'],
  [
    [
      'CollateralNumber',
      code(collateral.collateralNumber),
      `${collateral.description}, securing a loan of account ${collateral.accountNumber}: ${collateral.holds} collateral hold(s), ` +
        `${collateral.documents} document(s), ${collateral.fmHistory} file-maintenance history row(s), ${collateral.trackings} tracking record(s)`,
    ],
    [
      'CollateralDocumentLocator',
      code(collateral.documentLocator),
      `a document with ${collateral.documentTrackings} tracking record(s)`,
    ],
    ['CollateralDocumentTrackingLocator', code(collateral.documentTrackingLocator), 'one of those tracking records'],
    ['CollateralNumber', code(noMatch.collateralNumber), 'no such collateral'],
  ],
)}

${curl(`${P2}/collateral/getCollateral`, { CollateralNumber: collateral.collateralNumber })}

${curl(`${P2}/collateral/getCollateralDocumentTracking`, {
  CollateralNumber: collateral.collateralNumber,
  CollateralDocumentLocator: collateral.documentLocator,
  CollateralDocumentTrackingLocator: collateral.documentTrackingLocator,
})}

Its file-maintenance history is long on purpose, to page through: ask for a page, then send the answer's
\`Token\` back as \`PagingRequestContext.Token\` for the next one (the last page's \`Token\` is empty).

${curl(`${P2}/collateral/getCollateralFmHistoryPagedList`, {
  CollateralNumber: collateral.collateralNumber,
  PagingRequestContext: { NumberOfRecordsToReturn: 5 },
})}`,
    memberCredentialsSection(examples),
  ];
  return `${sections.join('\n\n')}\n`;
}

/** Member-level credentials of the demo accounts (src/seed/member-secrets.ts). */
function memberCredentialsSection(examples: DemoExamples): string {
  const accounts = Array.from({ length: DEMO_MEMBER_ACCOUNTS }, (_, i) => accountNumberOf(i + 1));
  const first = accounts[0]!;
  const [hold] = examples.shareTargets;
  return `## Member credentials

Staff credentials (\`AdministrativeCredentials\`, \`UserNumberCredentials\`, \`TokenCredentials\` from \`logon\`) reach
every account. Member-level credentials reach only their own account: a share update of any other account is
403. The first ${DEMO_MEMBER_ACCOUNTS} demo accounts have a home banking password and an audio access code:

${table(
  ['AccountNumber', 'HomeBankingPassword', 'AudioAccessCode'],
  accounts.map((account) => [code(account), code(demoMemberSecret(account).homeBankingPassword), code(demoMemberSecret(account).audioAccessCode)]),
)}

\`\`\`sh
curl -s http://localhost:8627${P2}/account/updateShareHoldByID \\
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
  -d '{"Credentials": {"AccountNumberCredentials": {"AccountNumber": "${first}", "HomeBankingPassword": "${demoMemberSecret(first).homeBankingPassword}"}}, "AccountNumber": "${hold?.accountNumber ?? first}", "ShareId": "${hold?.shareId ?? '0000'}", "ShareHoldLocator": ${hold?.locator ?? 1}, "ShareHoldUpdatableFields": {"Reference1": "MEMBER NOTE"}}'
\`\`\``;
}
