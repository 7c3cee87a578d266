/**
 * The deterministic demo dataset of a US credit union. `generateAccount(seed, index)` returns every record
 * of one account (names, shares and their sub-records, cards, home-banking user, MICR, lookups, corporate
 * transfers, collateral) from the seed and the account index alone, so account 42 is the same whether 50
 * or 1,000,000 accounts are seeded, and any account can be regenerated without the others.
 *
 * Deliberate overlaps across accounts are also decided from one side only, looking backwards:
 * - a joint owner of account k may be the primary owner of an earlier account (same person, same SSN),
 *   so findBySSN returns several accounts;
 * - an earlier account may hand a closed card number to a later one (`reissueTarget`), so findByAnyCard
 *   returns two accounts while findByActiveCard returns one;
 * - last names come from 60 common surnames, so a short name ("SMITH J") matches several accounts.
 */
import { FM_DATA_TYPES, fieldOf, recordDef, type FieldKind } from '../catalog/index.js';
import type { Row, WireRecord } from '../store/records.js';
import { Random, addDays, addMonths, earlierDate, laterDate, scatter } from './random.js';

/** "Today" for the dataset: fixed, so generation never depends on the clock. */
export const DATASET_AS_OF = '2026-06-30';

/** Active cards expire in this window (after any plausible run date); expired ones in 2019–2023. */
const ACTIVE_CARD_EXPIRY = { from: '2028-01-01', to: '2031-12-31' } as const;
const EXPIRED_CARD_EXPIRY = { from: '2019-01-01', to: '2023-12-31' } as const;

/** Record types the seed writes, parents before children. */
export const SEEDED_RECORD_NAMES = [
  'Account',
  'ShareName',
  'Share',
  'ShareAnalysis',
  'ShareAnalysisGroup',
  'ShareAnalysisPlan',
  'ShareCheckOrder',
  'ShareHold',
  'ShareNote',
  'ShareTransfer',
  'ShareTracking',
  'Card',
  'HomeBankingUser',
  'Micr',
  'Lookup',
  'CorpTransfer',
  'Collateral',
  'CollateralCollHold',
  'CollateralDocument',
  'CollateralDocumentTracking',
  'CollateralFmHistory',
  'CollateralTracking',
] as const;
export type SeededRecordName = (typeof SEEDED_RECORD_NAMES)[number];

/** Catalog record types the seed leaves empty on purpose, with the reason. */
export const UNSEEDED_RECORD_NAMES: Readonly<Record<string, string>> = {
  AccountFmHistory: 'written by share updates, one row per changed field',
};

/** One record to store: its parent key columns and its wire field values (the input of `toRow`). */
export interface SeedRecord {
  readonly keys: Row;
  readonly values: WireRecord;
}

export interface AccountBundle {
  readonly index: number;
  readonly accountNumber: string;
  readonly records: Readonly<Record<SeededRecordName, readonly SeedRecord[]>>;
}

/**
 * Independent random streams, always the second part of `Random.derive(seed, stream, …)`: a new draw in
 * one never shifts the values of another, and two streams never share a generator.
 */
const STREAM = { account: 1, person: 2, reissue: 3, numbering: 4, cardIssuer: 5 } as const;

/** Person ids: each account owns four (primary owner, joint owner, two share-level names). */
const PERSONS_PER_ACCOUNT = 4;
const PERSON_SLOT = { primary: 0, joint: 1, shareName: 2 } as const;

/** How far back a joint owner or a reissued card may reach (keeps the pairs close in small datasets). */
const JOINT_OWNER_REACH = 30;
const REISSUE_REACH = 12;

/**
 * An account before `index` (which must be above 1), at most `reach` back and uniform over that range,
 * so that the first accounts are not favoured. Cross-account references only look back: the referenced
 * account exists in every dataset that holds the referring one.
 */
function earlierAccount(rng: Random, index: number, reach: number): number {
  return index - rng.int(1, Math.min(reach, index - 1));
}

/**
 * The largest dataset whose numbers stay unique: lookup numbers (index × 4 + kind below 10^8) run out
 * first; GlobalSequence (index × 10 + n) and collateral numbers allow more.
 */
export const MAX_ACCOUNTS = 25_000_000;

/** AccountNumber: the 1-based index, zero-padded to 10 digits (DESIGN: Keys and records). */
export function accountNumberOf(index: number): string {
  return String(index).padStart(10, '0');
}

// ---------------------------------------------------------------------------------------------------
// Unique numbers: a bijection of a counter, so uniqueness holds across the dataset without a registry.
// ---------------------------------------------------------------------------------------------------

/** SSN areas 001–899 except 666 (never issued), groups 01–99, serials 0001–9999. */
const SSN_AREAS = 898;

/** Each multiplier is coprime with its modulus (checked by a test), which makes `scatter` a bijection. */
export const NUMBERINGS = {
  /** The 9 digits between a card's BIN and its check digit, from index × 4 + card slot. */
  cardBody: { id: 1, modulus: 1e9, multiplier: 7_368_787 },
  /** An SSN in the valid space, from the person id. */
  ssn: { id: 2, modulus: SSN_AREAS * 99 * 9999, multiplier: 4_999_963 },
  /** An account's MICR number (10 digits before its optional prefix), from the index. */
  micr: { id: 3, modulus: 1e10, multiplier: 777_781 },
  /** A lookup number, from index × 4 + lookup kind. */
  lookup: { id: 4, modulus: 1e8, multiplier: 31_415_927 },
} as const;

function uniqueNumber(seed: number, numbering: (typeof NUMBERINGS)[keyof typeof NUMBERINGS], value: number): number {
  if (value >= numbering.modulus) throw new Error(`numbering ${numbering.id} exhausted at ${value}`);
  const offset = Random.derive(seed, STREAM.numbering, numbering.id).int(0, numbering.modulus - 1);
  return scatter(value, numbering.modulus, numbering.multiplier, offset);
}

/** The Luhn check digit that completes `partial`. @example luhnCheckDigit('7992739871') // '3' */
export function luhnCheckDigit(partial: string): string {
  let sum = 0;
  for (let position = 0; position < partial.length; position += 1) {
    let digit = Number(partial[partial.length - 1 - position]);
    if (position % 2 === 0) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return String((10 - (sum % 10)) % 10);
}

/** Issuer prefixes of the credit union's Visa debit and Mastercard credit programs (fictional). */
export const CARD_BINS = ['431274', '431275', '525791'] as const;
/** Card slots 0–2 are an account's own cards; slot 3 is the number it later hands to another account. */
const REISSUED_CARD_SLOT = 3;

/** A 16-digit, Luhn-valid card number, unique per (account index, slot). */
function cardNumberOf(seed: number, index: number, slot: number): string {
  const bin = Random.derive(seed, STREAM.cardIssuer, index, slot).pick(CARD_BINS);
  const body = String(uniqueNumber(seed, NUMBERINGS.cardBody, index * 4 + slot)).padStart(9, '0');
  return `${bin}${body}${luhnCheckDigit(bin + body)}`;
}

function ssnOf(seed: number, personId: number): string {
  const position = uniqueNumber(seed, NUMBERINGS.ssn, personId);
  const areaIndex = Math.floor(position / (99 * 9999));
  const area = areaIndex + 1 >= 666 ? areaIndex + 2 : areaIndex + 1;
  const group = (Math.floor(position / 9999) % 99) + 1;
  const serial = (position % 9999) + 1;
  return `${String(area).padStart(3, '0')}${String(group).padStart(2, '0')}${String(serial).padStart(4, '0')}`;
}

/**
 * The later account that receives a closed card number of account `index`, if any: decided by the
 * earlier account alone, so the later one can find it by looking back `REISSUE_REACH` accounts.
 */
function reissueTarget(seed: number, index: number): number | undefined {
  const rng = Random.derive(seed, STREAM.reissue, index);
  return rng.chance(0.04) ? index + rng.int(1, REISSUE_REACH) : undefined;
}

// ---------------------------------------------------------------------------------------------------
// People
// ---------------------------------------------------------------------------------------------------

/** 60 common US surnames: few enough that a short name matches several accounts. */
// prettier-ignore
const SURNAMES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez',
  'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin',
  'Lee', 'Perez', 'Thompson', 'White', 'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson',
  'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Torres', 'Nguyen', 'Hill', 'Flores',
  'Green', 'Adams', 'Nelson', 'Baker', 'Hall', 'Rivera', 'Campbell', 'Mitchell', 'Carter', 'Roberts',
  'Gomez', 'Phillips', 'Evans', 'Turner', 'Diaz', 'Parker', 'Cruz', 'Edwards', 'Collins', 'Reyes',
] as const;

// prettier-ignore
const FIRST_NAMES = [
  'James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David', 'Elizabeth',
  'William', 'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Christopher', 'Karen',
  'Charles', 'Lisa', 'Daniel', 'Nancy', 'Matthew', 'Betty', 'Anthony', 'Sandra', 'Mark', 'Margaret',
  'Steven', 'Ashley', 'Andrew', 'Emily', 'Paul', 'Donna', 'Joshua', 'Michelle', 'Kevin', 'Amanda',
  'Brian', 'Melissa', 'George', 'Deborah', 'Maria', 'Jose', 'Luis', 'Ana', 'Carlos', 'Sofia',
] as const;

/** Most members live near the credit union (Minnesota); the rest moved away. */
const HOME_CITIES = [
  ['Minneapolis', 'MN', '554', '612'],
  ['Saint Paul', 'MN', '551', '651'],
  ['Bloomington', 'MN', '554', '952'],
  ['Rochester', 'MN', '559', '507'],
  ['Duluth', 'MN', '558', '218'],
  ['St. Cloud', 'MN', '563', '320'],
] as const;
const OTHER_CITIES = [
  ['Madison', 'WI', '537', '608'],
  ['Milwaukee', 'WI', '532', '414'],
  ['Des Moines', 'IA', '503', '515'],
  ['Fargo', 'ND', '581', '701'],
  ['Sioux Falls', 'SD', '571', '605'],
  ['Chicago', 'IL', '606', '312'],
  ['Denver', 'CO', '802', '303'],
  ['Phoenix', 'AZ', '850', '602'],
  ['Austin', 'TX', '787', '512'],
  ['Seattle', 'WA', '981', '206'],
] as const;
// prettier-ignore
const STREET_NAMES = [
  'Oak', 'Maple', 'Cedar', 'Pine', 'Elm', 'Lake', 'Park', 'Lincoln', 'Washington', 'Highland',
  'Sunset', 'River', 'Prairie', 'Willow', 'Birch', 'Summit', 'Grand', 'Franklin', 'Como', 'Nicollet',
] as const;
const STREET_SUFFIXES = ['St', 'Ave', 'Rd', 'Dr', 'Ln', 'Ct', 'Blvd', 'Way'] as const;
const OCCUPATIONS = [
  ['Registered Nurse', 'Regional Medical Center'],
  ['Teacher', 'Independent School District 281'],
  ['Electrician', 'North Star Electric'],
  ['Software Developer', 'Lakeside Systems'],
  ['Truck Driver', 'Great Plains Freight'],
  ['Accountant', 'Hennepin County'],
  ['Retail Manager', 'Twin Cities Hardware'],
  ['Machinist', 'Acme Precision Parts'],
  ['Retired', ''],
  ['Student', 'University of Minnesota'],
] as const;

export interface Address {
  readonly street: string;
  readonly extraAddress?: string;
  readonly city: string;
  readonly state: string;
  readonly zipCode: string;
  readonly areaCode: string;
}

interface IdentityDocument {
  readonly type: number;
  readonly description: string;
  readonly number: string;
  readonly issueDate: string;
  readonly expireDate: string;
  readonly verifyDate: string;
}

export interface Person {
  readonly personId: number;
  readonly first: string;
  readonly middle: string;
  readonly last: string;
  /** "SMITH J": last name and first initial, upper case. */
  readonly shortName: string;
  readonly ssn: string;
  readonly birthDate: string;
  readonly address: Address;
  readonly email: string;
  readonly homePhone: string;
  readonly mobilePhone?: string;
  readonly occupation: string;
  readonly employer: string;
  readonly identities: readonly IdentityDocument[];
}

function addressOf(rng: Random): Address {
  const [city, state, zipPrefix, areaCode] = rng.chance(0.75) ? rng.pick(HOME_CITIES) : rng.pick(OTHER_CITIES);
  return {
    street: `${rng.int(100, 19999)} ${rng.pick(STREET_NAMES)} ${rng.pick(STREET_SUFFIXES)}`,
    ...(rng.chance(0.15) ? { extraAddress: `Apt ${rng.int(1, 40)}${rng.pick(['', 'A', 'B'])}` } : {}),
    city,
    state,
    zipCode: `${zipPrefix}${rng.digits(2)}`,
    areaCode,
  };
}

/** A fictional phone number: 555-0100 to 555-0199 is reserved for fiction. */
function phoneOf(rng: Random, areaCode: string): string {
  return `${areaCode}-555-01${rng.digits(2)}`;
}

/** A driver's license, and for some people a passport, as the core's repeating Ident* entries. */
function identitiesOf(rng: Random, state: string, birthDate: string): IdentityDocument[] {
  const licenseIssued = rng.dateBetween(laterDate(addDays(birthDate, 16 * 366), '2021-07-01'), '2026-01-31');
  const identities: IdentityDocument[] = [
    {
      type: 1,
      description: `DRIVERS LICENSE ${state}`,
      number: `${rng.pick(['D', 'H', 'M', 'S', 'W'])}${rng.digits(7, true)}`,
      issueDate: licenseIssued,
      expireDate: addMonths(licenseIssued, 48),
      verifyDate: rng.dateBetween(licenseIssued, DATASET_AS_OF),
    },
  ];
  if (rng.chance(0.3)) {
    const passportIssued = rng.dateBetween('2017-01-01', '2025-12-31');
    identities.push({
      type: 2,
      description: 'US PASSPORT',
      number: rng.digits(9, true),
      issueDate: passportIssued,
      expireDate: addMonths(passportIssued, 120),
      verifyDate: rng.dateBetween(passportIssued, DATASET_AS_OF),
    });
  }
  return identities;
}

/** A person from (seed, person id) alone, so another account can refer to the same person. */
export function personOf(seed: number, personId: number): Person {
  const rng = Random.derive(seed, STREAM.person, personId);
  const first = rng.pick(FIRST_NAMES);
  const last = rng.pick(SURNAMES);
  const middle = rng.chance(0.7) ? rng.pick(FIRST_NAMES) : '';
  const birthDate = rng.dateBetween('1938-01-01', '2006-12-31');
  const address = addressOf(rng);
  const [occupation, employer] = rng.pick(OCCUPATIONS);
  return {
    personId,
    first,
    middle,
    last,
    shortName: `${last} ${first.charAt(0)}`.toUpperCase().slice(0, 20),
    ssn: ssnOf(seed, personId),
    birthDate,
    address,
    email:
      `${first}.${last}${personId % 1000}@${rng.pick(['example.com', 'example.net', 'example.org'])}`.toLowerCase(),
    homePhone: phoneOf(rng, address.areaCode),
    ...(rng.chance(0.8) ? { mobilePhone: phoneOf(rng, address.areaCode) } : {}),
    occupation,
    employer,
    identities: identitiesOf(rng, address.state, birthDate),
  };
}

/** A repeating field's entries: `[{EntryId: 1, <field>: value}, …]`. */
function entries(field: string, values: readonly unknown[]): { EntryId: number; [field: string]: unknown }[] {
  return values.map((value, position) => ({ EntryId: position + 1, [field]: value }));
}

/** The ShareName repeating Ident* fields, one entry per identity document. */
const IDENT_FIELDS: Readonly<Record<string, (document: IdentityDocument) => unknown>> = {
  IdentDocFlag: () => 1,
  IdentIdType: (document) => document.type,
  IdentIdDescription: (document) => document.description,
  IdentIdNumber: (document) => document.number,
  IdentIdIssueDate: (document) => document.issueDate,
  IdentIdExpireDate: (document) => document.expireDate,
  IdentIdVerifyDate: (document) => document.verifyDate,
};

/** Name record types (Symitar-style): who the name is on the account or share. */
const NAME_TYPE = { primary: 0, joint: 1, beneficiary: 2 } as const;

function nameValues(person: Person, type: number, locator: number, since: string): WireRecord {
  const { address } = person;
  const values: WireRecord = {
    Locator: locator,
    Type: type,
    First: person.first,
    Middle: person.middle,
    Last: person.last,
    ShortName: person.shortName,
    LongName: [person.first, person.middle, person.last].filter(Boolean).join(' '),
    Ssn: person.ssn,
    SsnType: 0,
    BirthDate: person.birthDate,
    Street: address.street,
    ExtraAddress: address.extraAddress,
    City: address.city,
    State: address.state,
    ZipCode: address.zipCode,
    Country: 'UNITED STATES',
    CountryCode: 'US',
    Email: person.email,
    HomePhone: person.homePhone,
    MobilePhone: person.mobilePhone,
    Occupation: person.occupation,
    EmployerName: person.employer || undefined,
    EffectiveDate: since,
    MbrStatus: 0,
    UsPersonFlag: 1,
    PreferredContactMethod: person.mobilePhone ? 2 : 1,
  };
  for (const [field, valueOf] of Object.entries(IDENT_FIELDS))
    values[field] = entries(field, person.identities.map(valueOf));
  return values;
}

// ---------------------------------------------------------------------------------------------------
// Account assembly
// ---------------------------------------------------------------------------------------------------

/** An account's records as they are produced, with per-scope locator counters. */
class AccountRecords {
  readonly records = Object.fromEntries(SEEDED_RECORD_NAMES.map((name) => [name, []])) as unknown as Record<
    SeededRecordName,
    SeedRecord[]
  >;
  private readonly counters = new Map<string, number>();

  /** 1, 2, 3, … per scope: a record type within the account, or within one collateral. */
  nextLocator(scope: string): number {
    const next = (this.counters.get(scope) ?? 0) + 1;
    this.counters.set(scope, next);
    return next;
  }

  add(name: SeededRecordName, keys: Row, values: WireRecord): void {
    this.records[name].push({ keys, values });
  }
}

interface ShareProduct {
  readonly id: string;
  readonly type: number;
  readonly kind: 'savings' | 'checking' | 'certificate';
  readonly descriptions: readonly string[];
  readonly balance: readonly [number, number];
  readonly divRate: readonly [number, number];
  /** A checking share's MICR draft number: which share a check drawn on the account's MICR number hits. */
  readonly draft?: string;
}

const SHARE_PRODUCTS = {
  primarySavings: {
    id: '0000',
    type: 0,
    kind: 'savings',
    descriptions: ['PRIMARY SAVINGS'],
    balance: [5, 25_000],
    divRate: [0.05, 0.25],
  },
  clubSavings: {
    id: '0001',
    type: 1,
    kind: 'savings',
    descriptions: ['HOLIDAY CLUB', 'VACATION CLUB', 'EMERGENCY SAVINGS'],
    balance: [0, 3_000],
    divRate: [0.1, 0.5],
  },
  checking: {
    id: '0010',
    type: 10,
    kind: 'checking',
    descriptions: ['SHARE DRAFT CHECKING', 'FREE CHECKING'],
    balance: [0, 8_000],
    divRate: [0, 0.05],
    draft: '1',
  },
  premiumChecking: {
    id: '0011',
    type: 11,
    kind: 'checking',
    descriptions: ['PREMIUM CHECKING'],
    balance: [500, 20_000],
    divRate: [0.1, 0.4],
    draft: '2',
  },
  certificate: {
    id: '0050',
    type: 50,
    kind: 'certificate',
    descriptions: [],
    balance: [500, 100_000],
    divRate: [3, 5],
  },
} as const satisfies Record<string, ShareProduct>;

const CERTIFICATE_TERMS_MONTHS = [6, 12, 24, 36, 60] as const;
const MAX_SHARES = 4;
/** A loan id used as the target of loan payments and collateral documents (loans are not catalog records). */
const LOAN_ID = '0101';

interface ShareFacts {
  readonly product: ShareProduct;
  readonly id: string;
  readonly openDate: string;
}

interface AccountFacts {
  readonly seed: number;
  readonly index: number;
  readonly accountNumber: string;
  readonly openDate: string;
  readonly branch: number;
  readonly primary: Person;
  readonly shares: readonly ShareFacts[];
  readonly businessName?: string;
  /** Account 1 carries every record kind, so that any dataset, however small, has a target for each operation. */
  readonly everyKind: boolean;
}

/** A balance skewed towards small amounts, as real share balances are. */
function skewedMoney(rng: Random, [min, max]: readonly [number, number]): number {
  return Math.round((min + (max - min) * rng.next() ** 3) * 100) / 100;
}

function chooseShareProducts(rng: Random, everyKind: boolean): ShareProduct[] {
  const products: ShareProduct[] = [SHARE_PRODUCTS.primarySavings];
  if (everyKind || rng.chance(0.6)) {
    products.push(SHARE_PRODUCTS.checking);
    if (rng.chance(0.12)) products.push(SHARE_PRODUCTS.premiumChecking);
  }
  if (everyKind || rng.chance(0.3)) products.push(SHARE_PRODUCTS.clubSavings);
  if (everyKind || rng.chance(0.2)) products.push(SHARE_PRODUCTS.certificate);
  return products.slice(0, MAX_SHARES);
}

function shareValues(rng: Random, share: ShareFacts): WireRecord {
  const { product } = share;
  const balance = skewedMoney(rng, product.balance);
  const term = rng.pick(CERTIFICATE_TERMS_MONTHS);
  const isCertificate = product.kind === 'certificate';
  return {
    Id: share.id,
    Type: product.type,
    Description: isCertificate ? `${term} MONTH CERTIFICATE` : rng.pick(product.descriptions),
    Nickname: rng.chance(0.15) ? rng.pick(['RAINY DAY', 'CAR FUND', 'BILLS', 'GROCERIES', 'COLLEGE']) : undefined,
    OpenDate: share.openDate,
    Balance: isCertificate ? Math.round(balance / 100) * 100 : balance,
    AvailableBalance: isCertificate ? 0 : balance,
    DivRate: rng.rate(...product.divRate),
    DivType: isCertificate ? 2 : 0,
    MaturityDate: isCertificate ? addMonths(share.openDate, term) : undefined,
    LastFmDate: rng.dateBetween(share.openDate, DATASET_AS_OF),
    UserChar1: rng.chance(0.1) ? rng.pick(['ROUND-UP ENROLLED', 'ESTATEMENTS', 'PAPER STATEMENTS']) : undefined,
  };
}

// ---- Tracking records (ShareTracking, CollateralTracking, CollateralDocumentTracking) ----

/** One user-defined tracking kind: which numbered fields it fills and with what. */
interface TrackingTemplate {
  readonly type: number;
  readonly trackingCode: number;
  /** UserChar1, UserChar2, …: choices, or a generator for free-form values. */
  readonly chars?: readonly (readonly string[] | ((rng: Random) => string))[];
  /** UserAmount1, …: ranges. */
  readonly amounts?: readonly (readonly [number, number])[];
  /** UserCode1, …: choices. */
  readonly codes?: readonly (readonly number[])[];
  /** UserNumber1, …: ranges. */
  readonly numbers?: readonly (readonly [number, number])[];
  /** UserRate1, …: ranges. */
  readonly rates?: readonly (readonly [number, number])[];
  /** How many of UserDate1, … to fill with dates after the creation date. */
  readonly dates?: number;
  /** Months until the tracking record expires, when it does. */
  readonly expiresInMonths?: number;
}

const SHARE_TRACKING_TEMPLATES: readonly TrackingTemplate[] = [
  {
    type: 5,
    trackingCode: 1,
    chars: [['OVERDRAFT PRIVILEGE'], ['OPT-IN', 'OPT-OUT'], ['REG E CONSENT ON FILE']],
    amounts: [[250, 1500]],
    codes: [[0, 1]],
    dates: 1,
  },
  {
    type: 12,
    trackingCode: 2,
    chars: [
      ['DIRECT DEPOSIT'],
      ['ACME MANUFACTURING', 'STATE OF MINNESOTA', 'REGIONAL MEDICAL CENTER', 'ISD 281 PAYROLL'],
    ],
    amounts: [[800, 4200]],
    numbers: [[1, 2]],
    dates: 1,
  },
  {
    type: 30,
    trackingCode: 3,
    chars: [['SPRING CERTIFICATE PROMO', 'REFER A FRIEND', 'HOLIDAY SKIP-A-PAY']],
    rates: [[0.25, 1.5]],
    dates: 2,
    expiresInMonths: 12,
  },
];

const COLLATERAL_TRACKING_TEMPLATES: readonly TrackingTemplate[] = [
  {
    type: 1,
    trackingCode: 10,
    chars: [['STATE FARM', 'PROGRESSIVE', 'GEICO', 'ALLSTATE', 'AMERICAN FAMILY'], (rng) => `POLICY ${rng.digits(10)}`],
    amounts: [[500, 1000]],
    dates: 1,
    expiresInMonths: 12,
  },
  {
    type: 2,
    trackingCode: 11,
    chars: [['LIEN RECORDED'], ['MN DVS', 'WI DOT', 'HENNEPIN COUNTY RECORDER']],
    numbers: [[100000, 999999]],
    dates: 2,
  },
];

const DOCUMENT_TRACKING_TEMPLATES: readonly TrackingTemplate[] = [
  {
    type: 3,
    trackingCode: 20,
    chars: [['REQUESTED FROM MEMBER', 'SECOND NOTICE SENT', 'RECEIVED - PENDING SCAN']],
    codes: [[1, 2, 3]],
    dates: 1,
  },
  { type: 4, trackingCode: 21, chars: [['IMAGED'], ['BATCH 2026-Q1', 'BATCH 2026-Q2']], dates: 1 },
];

/** Fills the tracking fields a template names; the numbered families are the catalog's (UserChar1..20, …). */
function trackingValues(rng: Random, template: TrackingTemplate, locator: number, since: string): WireRecord {
  const creationDate = rng.dateBetween(since, DATASET_AS_OF);
  const values: WireRecord = {
    Locator: locator,
    Type: template.type,
    TrackingCode: template.trackingCode,
    CreationDate: creationDate,
    CreationTime: rng.timeOfDay(8, 17),
    ExpireDate: template.expiresInMonths ? addMonths(creationDate, template.expiresInMonths) : undefined,
    FmLastDate: rng.dateBetween(creationDate, DATASET_AS_OF),
    RecordChangeDate: rng.dateBetween(creationDate, DATASET_AS_OF),
    UserId: rng.int(1, 250),
  };
  template.chars?.forEach((choice, position) => {
    values[`UserChar${position + 1}`] = typeof choice === 'function' ? choice(rng) : rng.pick(choice);
  });
  template.amounts?.forEach((range, position) => (values[`UserAmount${position + 1}`] = rng.money(...range)));
  template.codes?.forEach((choices, position) => (values[`UserCode${position + 1}`] = rng.pick(choices)));
  template.numbers?.forEach((range, position) => (values[`UserNumber${position + 1}`] = rng.int(...range)));
  template.rates?.forEach((range, position) => (values[`UserRate${position + 1}`] = rng.rate(...range)));
  for (let position = 1; position <= (template.dates ?? 0); position += 1) {
    values[`UserDate${position}`] = rng.dateBetween(creationDate, addMonths(DATASET_AS_OF, 12));
  }
  return values;
}

// ---- Share sub-records ----

type ShareChildName =
  | 'ShareAnalysis'
  | 'ShareAnalysisGroup'
  | 'ShareAnalysisPlan'
  | 'ShareCheckOrder'
  | 'ShareHold'
  | 'ShareNote'
  | 'ShareTransfer'
  | 'ShareTracking'
  | 'ShareName';

interface ShareChildContext {
  readonly rng: Random;
  readonly account: AccountFacts;
  readonly share: ShareFacts;
  readonly locator: number;
}

interface ShareChildPlan {
  readonly record: ShareChildName;
  /** Probability that a share carries one; 0 where the kind makes no sense (check orders on savings). */
  readonly chance: (share: ShareFacts) => number;
  /** undefined when this share cannot have one after all (a transfer with nowhere to go). */
  readonly build: (context: ShareChildContext) => WireRecord | undefined;
}

interface HoldKind {
  readonly type: number;
  readonly reference: string;
  /** Days until the hold releases. */
  readonly days: readonly [number, number];
  readonly amount: readonly [number, number];
}

const HOLD_KINDS: readonly HoldKind[] = [
  { type: 1, reference: 'CHECK DEPOSIT', days: [2, 7], amount: [50, 2500] },
  { type: 2, reference: 'MOBILE DEPOSIT', days: [1, 5], amount: [20, 1500] },
  { type: 3, reference: 'ACH DEBIT PENDING', days: [1, 3], amount: [10, 900] },
  { type: 7, reference: 'PLEDGED FOR LOAN', days: [365, 1825], amount: [500, 10_000] },
  { type: 9, reference: 'LEGAL ORDER', days: [30, 180], amount: [100, 5000] },
];

const NOTE_TEXTS = [
  'MEMBER PREFERS EMAIL CONTACT',
  'VERIFIED ADDRESS BY PHONE',
  'DO NOT WAIVE NSF FEES',
  'TRAVEL NOTICE: EUROPE TWO WEEKS',
  'POA ON FILE - SEE IMAGING',
  'ROUND-UP SAVINGS ENROLLED',
  'DIRECT DEPOSIT FROM EMPLOYER',
  'CALL BEFORE RETURNING ITEMS',
  'ADDRESS CHANGE REQUESTED ONLINE',
  'MEMBER ASKED ABOUT HELOC RATES',
] as const;

const isChecking = (share: ShareFacts) => share.product.kind === 'checking';
const isPrimarySavings = (share: ShareFacts) => share.id === SHARE_PRODUCTS.primarySavings.id;

/** Which shares carry which sub-records. Every primary savings share has a hold and a note (update targets). */
const SHARE_CHILD_PLANS: readonly ShareChildPlan[] = [
  {
    record: 'ShareHold',
    chance: (share) => (isPrimarySavings(share) ? 1 : 0.25),
    build: ({ rng, account, locator }) => {
      const kind = rng.pick(HOLD_KINDS);
      const effective = rng.dateBetween(addDays(DATASET_AS_OF, -20), DATASET_AS_OF);
      return {
        Locator: locator,
        Type: kind.type,
        Amount: rng.money(...kind.amount),
        EffectiveDate: effective,
        ExpirationDate: addDays(effective, rng.int(...kind.days)),
        Reference1: kind.type === 1 ? `${kind.reference} #${rng.int(1001, 9999)}` : kind.reference,
        Reference2: `BRANCH ${String(account.branch).padStart(2, '0')} TELLER ${rng.int(1, 40)}`,
        Reference3: rng.chance(0.3) ? `CASE ${rng.digits(6, true)}` : undefined,
      };
    },
  },
  {
    record: 'ShareNote',
    chance: (share) => (isPrimarySavings(share) ? 1 : 0.2),
    build: ({ rng, locator }) => {
      const count = rng.int(1, 3);
      const texts = new Set<string>();
      while (texts.size < count) texts.add(rng.pick(NOTE_TEXTS));
      return {
        Locator: locator,
        Code: rng.int(0, 5),
        ExpirationDate: rng.chance(0.3) ? rng.dateBetween(DATASET_AS_OF, '2027-12-31') : undefined,
        Text: entries('Text', [...texts]),
      };
    },
  },
  {
    record: 'ShareAnalysis',
    chance: (share) => (isChecking(share) ? 0.35 : 0),
    build: ({ rng, locator }) => {
      const month = addMonths(DATASET_AS_OF.slice(0, 8) + '01', -rng.int(1, 12));
      return {
        Locator: locator,
        Type: 1,
        CashAmtTotal: rng.money(0, 12_000),
        CheckAmtTotal: rng.money(0, 30_000),
        ItemCount: rng.int(5, 400),
        StatementGroup: rng.int(1, 4),
        EffectiveDate: month,
        ExpireDate: addDays(addMonths(month, 1), -1),
      };
    },
  },
  {
    record: 'ShareAnalysisGroup',
    chance: (share) => (isChecking(share) ? 0.2 : 0),
    build: ({ rng, share, locator }) => ({
      Locator: locator,
      GroupCode: rng.int(1, 20),
      Comment1: rng.pick(['SMALL BUSINESS TIER 1', 'SMALL BUSINESS TIER 2', 'NONPROFIT', 'SOLE PROPRIETOR']),
      Comment2: rng.pick(['REVIEWED ANNUALLY', 'FEE WAIVER THROUGH YEAR END', '']),
      EffectiveDate: rng.dateBetween(share.openDate, DATASET_AS_OF),
      ExpireDate: rng.chance(0.5) ? rng.dateBetween(DATASET_AS_OF, '2027-12-31') : undefined,
    }),
  },
  {
    record: 'ShareAnalysisPlan',
    chance: (share) => (isChecking(share) ? 0.2 : 0),
    build: ({ rng, share, locator }) => {
      const [description, definedCode, charge] = rng.pick([
        ['BASIC BUSINESS PLAN', 1, 5],
        ['ANALYSIS PLUS PLAN', 2, 15],
        ['NONPROFIT PLAN', 3, 0],
        ['HIGH VOLUME PLAN', 4, 25],
      ] as const);
      return {
        Locator: locator,
        Description: description,
        DefinedCode: definedCode,
        Charge: charge,
        EffectiveDate: rng.dateBetween(share.openDate, DATASET_AS_OF),
        ExpireDate: rng.chance(0.3) ? rng.dateBetween(DATASET_AS_OF, '2027-12-31') : undefined,
      };
    },
  },
  {
    record: 'ShareCheckOrder',
    chance: (share) => (isChecking(share) ? 0.5 : 0),
    build: ({ rng, share, locator }) => {
      const orderDate = rng.dateBetween(laterDate(share.openDate, '2020-01-01'), DATASET_AS_OF);
      const status = rng.pick([0, 1, 2]);
      return {
        Locator: locator,
        Quantity: rng.pick([100, 150, 200, 300]),
        Status: status,
        OrderDate: orderDate,
        StartingCheckNumber: 1001 + rng.int(0, 40) * 50,
        Style: rng.pick(['WALLET', 'DUPLICATE', 'DESK', 'BUSINESS']),
        DeliveryMethod: rng.pick([0, 1, 2]),
        ShipDate: status > 0 ? addDays(orderDate, rng.int(2, 7)) : undefined,
      };
    },
  },
  {
    record: 'ShareTransfer',
    chance: () => 0.25,
    build: ({ rng, account, share, locator }) => {
      const ownTargets = account.shares.filter((other) => other.id !== share.id);
      const toOtherMember = account.index > 1 && (ownTargets.length === 0 || rng.chance(0.2));
      if (!toOtherMember && ownTargets.length === 0) return undefined;
      const toLoan = !toOtherMember && rng.chance(0.25);
      const toAccount = toOtherMember ? accountNumberOf(earlierAccount(rng, account.index, 50)) : account.accountNumber;
      const toId = toOtherMember ? '0000' : toLoan ? LOAN_ID : rng.pick(ownTargets).id;
      const effective = rng.dateBetween(laterDate(share.openDate, '2022-01-01'), DATASET_AS_OF);
      return {
        Locator: locator,
        Type: toLoan ? 1 : 0,
        Description: toLoan ? 'AUTO LOAN PAYMENT' : toOtherMember ? 'TRANSFER TO MEMBER' : 'MONTHLY SAVINGS TRANSFER',
        ToAccount: toAccount,
        ToIdType: toLoan ? 1 : 0,
        ToId: toId,
        Amount: rng.money(25, 600),
        Frequency: rng.pick([1, 2, 3]),
        Day1: rng.int(1, 28),
        EffectiveDate: effective,
        NextDate: rng.dateBetween(addDays(DATASET_AS_OF, 1), addDays(DATASET_AS_OF, 31)),
        ExpirationDate: rng.chance(0.3) ? addMonths(effective, 36) : undefined,
        PaymentType: rng.int(0, 2),
        RegE: rng.int(0, 1),
      };
    },
  },
  {
    record: 'ShareTracking',
    chance: () => 0.2,
    build: ({ rng, share, locator }) => ({
      ...trackingValues(rng, rng.pick(SHARE_TRACKING_TEMPLATES), locator, share.openDate),
      Id: share.id,
      IdType: 0,
    }),
  },
  {
    record: 'ShareName',
    chance: (share) => (share.product.kind === 'certificate' ? 0.6 : isPrimarySavings(share) ? 0.05 : 0.15),
    build: ({ rng, account, share, locator }) => {
      const slot = PERSON_SLOT.shareName + rng.int(0, 1);
      const person = personOf(account.seed, account.index * PERSONS_PER_ACCOUNT + slot);
      const type = isChecking(share) ? NAME_TYPE.joint : NAME_TYPE.beneficiary;
      return {
        ...nameValues(person, type, locator, share.openDate),
        BeneficiaryPercent: type === NAME_TYPE.beneficiary ? rng.pick([100, 50]) : undefined,
      };
    },
  },
];

// ---- Cards, home banking, MICR, lookups ----

/** Card Status codes: 0 active, 1 inactive (closed), 2 lost or stolen. */
export const CARD_STATUS = { active: 0, inactive: 1, lost: 2 } as const;

/** Card expirations are the last day of a month. */
function monthEnd(rng: Random, window: { readonly from: string; readonly to: string }): string {
  const someDay = rng.dateBetween(window.from, window.to);
  return addDays(addMonths(someDay.slice(0, 8) + '01', 1), -1);
}

function cardValues(
  rng: Random,
  locator: number,
  cardNumber: string,
  state: 'active' | 'expired' | 'inactive' | 'lost',
): WireRecord {
  const expirationDate = monthEnd(rng, state === 'active' ? ACTIVE_CARD_EXPIRY : EXPIRED_CARD_EXPIRY);
  return {
    Locator: locator,
    CardNumber: cardNumber,
    Status: state === 'expired' ? CARD_STATUS.active : CARD_STATUS[state],
    // Valid three or four years; a card expiring late in the window was issued recently, never after "today".
    IssueDate: earlierDate(
      addDays(addMonths(expirationDate, -rng.pick([36, 48])), 1),
      rng.dateBetween(addDays(DATASET_AS_OF, -180), DATASET_AS_OF),
    ),
    ExpirationDate: expirationDate,
  };
}

function addCards(out: AccountRecords, rng: Random, account: AccountFacts): void {
  const { seed, index } = account;
  const keys = { account_number: account.accountNumber };
  const incoming: number[] = [];
  for (let back = 1; back <= REISSUE_REACH && index - back >= 1; back += 1) {
    if (reissueTarget(seed, index - back) === index) incoming.push(index - back);
  }
  const outgoing = reissueTarget(seed, index) !== undefined;
  const states = account.everyKind
    ? (['active', 'inactive', 'expired'] as const)
    : Array.from(
        {
          length: rng.weighted([
            [0, 20],
            [1, 45],
            [2, 25],
            [3, 10],
          ] as const),
        },
        () =>
          rng.weighted([
            ['active', 75],
            ['expired', 10],
            ['inactive', 10],
            ['lost', 5],
          ] as const),
      );
  const own = states.slice(0, Math.max(0, 3 - incoming.length - (outgoing ? 1 : 0)));
  own.forEach((state, slot) => {
    out.add('Card', keys, cardValues(rng, out.nextLocator('Card'), cardNumberOf(seed, index, slot), state));
  });
  // The closed card whose number a later account received, then the numbers received from earlier accounts.
  if (outgoing) {
    out.add(
      'Card',
      keys,
      cardValues(rng, out.nextLocator('Card'), cardNumberOf(seed, index, REISSUED_CARD_SLOT), 'inactive'),
    );
  }
  for (const origin of incoming) {
    out.add(
      'Card',
      keys,
      cardValues(rng, out.nextLocator('Card'), cardNumberOf(seed, origin, REISSUED_CARD_SLOT), 'active'),
    );
  }
}

function addHomeBanking(out: AccountRecords, rng: Random, account: AccountFacts): void {
  if (!account.everyKind && !rng.chance(0.7)) return;
  const { primary } = account;
  out.add(
    'HomeBankingUser',
    { account_number: account.accountNumber },
    {
      Locator: out.nextLocator('HomeBankingUser'),
      // Unique by construction: the account index ends the name.
      UserName: `${primary.first.charAt(0)}${primary.last}${account.index}`.toLowerCase(),
      Status: rng.weighted([
        [0, 90],
        [1, 7],
        [2, 3],
      ] as const),
      CreateDate: rng.dateBetween(laterDate(account.openDate, '2005-01-01'), DATASET_AS_OF),
    },
  );
}

/** One MICR number per account with checking; each checking share is reached by its draft number. */
function addMicr(out: AccountRecords, rng: Random, account: AccountFacts): void {
  const checking = account.shares.filter((share) => share.product.draft !== undefined);
  if (checking.length === 0) return;
  const body = String(uniqueNumber(account.seed, NUMBERINGS.micr, account.index)).padStart(10, '0');
  // An optional 1–2 digit prefix gives 10–12 digits; numbers of different lengths never collide.
  const micrNumber = rng.digits(rng.int(0, 2), true) + body;
  for (const share of checking) {
    out.add(
      'Micr',
      { account_number: account.accountNumber },
      { Locator: out.nextLocator('Micr'), MicrNumber: micrNumber, Draft: share.product.draft, ShareId: share.id },
    );
  }
}

/** Lookup kinds (types are the credit union's configuration, 0–99): some point at a share, some not. */
export const LOOKUP_KINDS = [
  { type: 3, label: 'Payroll employee id', prefix: 'EMP', withShare: false },
  { type: 12, label: 'Account number before the core conversion', prefix: '', withShare: true },
  { type: 25, label: 'ACH company id', prefix: '1', withShare: true },
  { type: 40, label: 'Bill-pay subscriber id', prefix: 'BP', withShare: false },
] as const;

function addLookups(out: AccountRecords, rng: Random, account: AccountFacts): void {
  const kinds = LOOKUP_KINDS.map((kind, slot) => ({ kind, slot })).filter(
    ({ slot }) => (account.everyKind && slot < 2) || rng.chance(0.12),
  );
  for (const { kind, slot } of kinds) {
    const number = uniqueNumber(account.seed, NUMBERINGS.lookup, account.index * LOOKUP_KINDS.length + slot);
    out.add(
      'Lookup',
      { account_number: account.accountNumber },
      {
        Locator: out.nextLocator('Lookup'),
        LookupType: kind.type,
        LookupNumber: `${kind.prefix}${String(number).padStart(8, '0')}`,
        ShareId: kind.withShare ? rng.pick(account.shares).id : undefined,
      },
    );
  }
}

// ---- Corporate transfers ----

const SETTLEMENT_GL_ACCOUNTS = ['101500-000', '101520-000', '739100-000'] as const;

/**
 * Transfers a business account originated. GlobalSequence = index × 10 + n is unique across the dataset
 * (and fits an integer up to 200 million accounts); the date is the day it was entered.
 */
function addCorpTransfers(out: AccountRecords, rng: Random, account: AccountFacts): void {
  if (!account.businessName) return;
  const fromShare = account.shares.find(isChecking) ?? account.shares[0];
  if (!fromShare) return;
  const count = rng.int(1, 3);
  for (let n = 1; n <= count; n += 1) {
    const isLoanPayment = rng.chance(0.3);
    const toAccount =
      isLoanPayment || account.index === 1
        ? account.accountNumber
        : accountNumberOf(earlierAccount(rng, account.index, 50));
    const entered = rng.dateBetween('2024-07-01', DATASET_AS_OF);
    const effective = addDays(entered, rng.int(0, 2));
    const enteredTime = rng.timeOfDay(7, 16);
    const cancelled = rng.chance(0.08);
    const amount = rng.money(100, 25_000);
    const interest = isLoanPayment ? Math.round(amount * rng.int(5, 25)) / 100 : 0;
    const memo = isLoanPayment
      ? `LOAN ${LOAN_ID} PAYMENT`
      : rng.pick(['PAYROLL FUNDING', 'VENDOR PAYMENT', 'OWNER DRAW', 'RENT']);
    out.add(
      'CorpTransfer',
      {},
      {
        GlobalSequenceDate: entered,
        GlobalSequence: account.index * 10 + n,
        Type: isLoanPayment ? 2 : 1,
        Status: cancelled ? 3 : 2,
        Amount: amount,
        InterestAmount: interest,
        PrincipalAmount: Math.round((amount - interest) * 100) / 100,
        FromAccount: account.accountNumber,
        FromIdType: 0,
        FromId: fromShare.id,
        FromGlAccount: rng.pick(SETTLEMENT_GL_ACCOUNTS),
        ToAccount: toAccount,
        ToIdType: isLoanPayment ? 1 : 0,
        ToId: isLoanPayment ? LOAN_ID : '0000',
        ToGlAccount: rng.pick(SETTLEMENT_GL_ACCOUNTS),
        EnteredDate: entered,
        EnteredTime: enteredTime,
        EnteredByCorporateUser: rng.int(1, 25),
        EnteredByMemberUser: rng.int(1, 5),
        EnteredValidationMethod: rng.pick(['PASSWORD+OTP', 'HARDWARE TOKEN', 'SMS CODE']),
        EffectiveDate: effective,
        PostDate: effective,
        CompletedDate: effective,
        CompletedTime: Math.min(2359, enteredTime + rng.int(1, 3) * 100),
        CompletedByUser: rng.int(1, 250),
        CompletedReason: cancelled ? 'CANCELLED BY MEMBER' : 'PROCESSED',
        NoticeDate: entered,
        NotificationDate: effective,
        NotificationTime: Math.min(2359, enteredTime + rng.int(3, 6) * 100),
        NotificationMethod: rng.pick([1, 2]),
        NotificationStatus: 1,
        NotificationUser: account.primary.email,
        OriginatorTransactionSeq: rng.int(100_000, 999_999),
        ReceiverTransactionSeq: rng.int(100_000, 999_999),
        OriginatorStatementDesc: `${memo} TO ${toAccount.slice(-4)}`.slice(0, 40),
        ReceiverStatementDesc: `FROM ${account.businessName}`.slice(0, 40),
        Memo: entries('Memo', rng.chance(0.4) ? [memo, `INVOICE ${entered.slice(0, 4)}-${rng.int(100, 999)}`] : [memo]),
      },
    );
  }
}

// ---- Collateral ----

// prettier-ignore
const VEHICLES = [
  'HONDA CIVIC', 'TOYOTA CAMRY', 'FORD F-150', 'CHEVROLET EQUINOX', 'SUBARU OUTBACK',
  'JEEP WRANGLER', 'TOYOTA RAV4', 'HONDA CR-V', 'RAM 1500', 'NISSAN ALTIMA',
] as const;
/** VINs never use I, O or Q. */
const VIN_CHARACTERS = [...'ABCDEFGHJKLMNPRSTUVWXYZ0123456789'];

interface CollateralKind {
  readonly type: number;
  readonly describe: (rng: Random, account: AccountFacts) => string;
  readonly value: readonly [number, number];
  readonly valueSources: readonly string[];
  readonly requiredDocuments: readonly string[];
  readonly userChars: (rng: Random, account: AccountFacts) => string[];
  readonly lifeMonths: number;
}

const COLLATERAL_KINDS: readonly CollateralKind[] = [
  {
    type: 1,
    describe: (rng) => `${rng.int(2012, 2026)} ${rng.pick(VEHICLES)}`,
    value: [4_000, 65_000],
    valueSources: ['NADA', 'KBB', 'DEALER INVOICE'],
    requiredDocuments: ['CERTIFICATE OF TITLE', 'INSURANCE DECLARATION', 'BILL OF SALE'],
    userChars: (rng) => [
      Array.from({ length: 17 }, () => rng.pick(VIN_CHARACTERS)).join(''),
      `${rng.pick(['ABC', 'KFX', 'MNT', 'RPL'])}-${rng.digits(3)}`,
      rng.pick(['WHITE', 'BLACK', 'SILVER', 'BLUE', 'RED', 'GRAY']),
    ],
    lifeMonths: 72,
  },
  {
    type: 2,
    describe: (_rng, account) => `RE ${account.primary.address.street}`.toUpperCase(),
    value: [120_000, 650_000],
    valueSources: ['APPRAISAL', 'COUNTY ASSESSMENT', 'AVM'],
    requiredDocuments: ['DEED OF TRUST', 'APPRAISAL REPORT', 'TITLE INSURANCE POLICY', 'FLOOD CERTIFICATE'],
    userChars: (rng, account) => [
      `PID ${rng.digits(2)}-${rng.digits(3)}-${rng.digits(2)}-${rng.digits(2)}`,
      account.primary.address.city.toUpperCase(),
      rng.pick(['OWNER OCCUPIED', 'SECOND HOME', 'RENTAL']),
    ],
    lifeMonths: 360,
  },
  {
    type: 3,
    describe: () => 'SHARE SECURED - SHARE 0000',
    value: [500, 20_000],
    valueSources: ['SHARE BALANCE'],
    requiredDocuments: ['SHARE PLEDGE AGREEMENT'],
    userChars: () => ['SHARE 0000'],
    lifeMonths: 60,
  },
  {
    type: 4,
    describe: (rng) =>
      `${rng.int(2008, 2026)} ${rng.pick(['LUND 1875 BOAT', 'WINNEBAGO VISTA RV', 'POLARIS RZR', 'HARLEY-DAVIDSON'])}`,
    value: [6_000, 120_000],
    valueSources: ['NADA', 'DEALER INVOICE'],
    requiredDocuments: ['CERTIFICATE OF TITLE', 'INSURANCE DECLARATION'],
    userChars: (rng) => [`HIN ${rng.digits(10)}`],
    lifeMonths: 120,
  },
];

/**
 * Account 1's collateral is revalued again and again: its file-maintenance history has this many rows, so
 * every dataset, however small, has a list long enough to page through (1,000 pages of 5).
 */
export const LONG_HISTORY_RECORDS = 5000;

/** Collateral fields a loan officer changes after creation; history rows end at the record's current value. */
const COLLATERAL_HISTORY_FIELDS = ['CollateralAppStatus', 'ValueSource', 'Value', 'ValueDate', 'ExpireDate'] as const;

/** A plausible earlier value of a field, by catalog kind. */
function previousValue(rng: Random, kind: FieldKind, current: unknown, alternatives: readonly string[]): unknown {
  switch (kind) {
    case 'money':
    case 'rate':
      return Math.round(Number(current) * rng.int(80, 115)) / 100;
    case 'date':
      return addDays(String(current), -rng.int(30, 400));
    case 'integer':
      return Number(current) === 0 ? 1 : 0;
    case 'string':
      return alternatives.find((value) => value !== current) ?? '';
  }
}

/** Collateral number: '7' then the account index and a per-account ordinal, 10 digits, unique. */
export function collateralNumberOf(index: number, ordinal: number): string {
  return String(7_000_000_000 + index * 10 + ordinal);
}

function addCollateral(out: AccountRecords, rng: Random, account: AccountFacts, ordinal: number): void {
  const kind = rng.pick(COLLATERAL_KINDS);
  const collateralNumber = collateralNumberOf(account.index, ordinal);
  const collateralKeys = { collateral_number: collateralNumber };
  const scoped = (name: string) => `${collateralNumber}/${name}`;
  const createDate = rng.dateBetween(laterDate(account.openDate, '2016-01-01'), DATASET_AS_OF);
  const userChars = kind.userChars(rng, account);
  // File maintenance after creation, in posting order; the last one is the record's LastFmDate.
  const usualHistory = rng.int(1, COLLATERAL_HISTORY_FIELDS.length);
  const historyCount = account.everyKind ? LONG_HISTORY_RECORDS : usualHistory;
  const historyPostDates = Array.from({ length: historyCount }, () =>
    rng.dateBetween(createDate, DATASET_AS_OF),
  ).sort();
  const lastFmDate = historyPostDates[historyPostDates.length - 1];
  const collateral: WireRecord = {
    Number: collateralNumber,
    Type: kind.type,
    CollateralAppStatus: 1,
    CollateralOwner: `${account.primary.first} ${account.primary.last}`.toUpperCase(),
    Description: kind.describe(rng, account).slice(0, 40),
    RequiredDocumentList: kind.requiredDocuments.join(',').slice(0, 40),
    ValueSource: rng.pick(kind.valueSources),
    Value: Math.round(rng.money(...kind.value)),
    ValueDate: rng.dateBetween(createDate, DATASET_AS_OF),
    CreateDate: createDate,
    ExpireDate: addMonths(createDate, kind.lifeMonths),
    LastFmDate: lastFmDate,
    RecordChangeDate: lastFmDate,
    FmLastPurgeDate: rng.chance(0.3) ? rng.dateBetween(createDate, DATASET_AS_OF) : undefined,
  };
  userChars.forEach((value, position) => (collateral[`UserChar${position + 1}`] = value));
  out.add('Collateral', {}, collateral);

  const holdCount = rng.int(1, 2);
  for (let n = 0; n < holdCount; n += 1) {
    const share = kind.type === 3 ? account.shares[0] : rng.pick(account.shares);
    const effective = rng.dateBetween(createDate, DATASET_AS_OF);
    out.add('CollateralCollHold', collateralKeys, {
      Locator: out.nextLocator(scoped('CollateralCollHold')),
      AccountNumber: account.accountNumber,
      Amount: Math.round(Number(collateral.Value) * rng.int(10, 100)) / 100,
      EffectiveDate: effective,
      ExpirationDate: addMonths(effective, rng.pick([12, 36, 60])),
      Id: share?.id,
      IdType: 0,
      RecordChangeDate: rng.dateBetween(effective, DATASET_AS_OF),
    });
  }

  const documentCount = rng.int(1, kind.requiredDocuments.length);
  kind.requiredDocuments.slice(0, documentCount).forEach((description, position) => {
    const documentLocator = out.nextLocator(scoped('CollateralDocument'));
    const documentDate = rng.dateBetween(createDate, DATASET_AS_OF);
    const outstanding = rng.chance(0.15);
    out.add('CollateralDocument', collateralKeys, {
      Locator: documentLocator,
      AccountNumber: account.accountNumber,
      Description: description,
      Location: rng.pick(['IMAGING', 'VAULT B-14', 'LOAN FILE', 'BRANCH ' + String(account.branch).padStart(2, '0')]),
      Number: `${rng.pick(['T', 'D', 'P'])}${rng.digits(8, true)}`,
      SlId: LOAN_ID,
      SlIdType: 1,
      Branch: account.branch,
      OfficerCode: rng.int(1, 60),
      Status: outstanding ? 1 : 0,
      Type: position + 1,
      DocumentDate: documentDate,
      ReceivedDate: outstanding ? undefined : addDays(documentDate, rng.int(0, 20)),
      StatusDate: documentDate,
      ExcpDays: outstanding ? 30 : 0,
      ExcpNoticeCount: outstanding ? rng.int(1, 3) : 0,
      ExcpNoticeCountCpWork: 0,
      ExcpNoticeOption: outstanding ? 1 : 0,
      ExcpNoticeDate: outstanding ? addDays(documentDate, 30) : undefined,
      ExpireDate: description === 'INSURANCE DECLARATION' ? addMonths(documentDate, 12) : undefined,
      LastFmDate: rng.dateBetween(documentDate, DATASET_AS_OF),
      RecordChangeDate: rng.dateBetween(documentDate, DATASET_AS_OF),
      UserChar1: rng.chance(0.3) ? `SCAN ${rng.digits(6)}` : undefined,
    });
    // The first document always has tracking, so document-tracking operations have a target.
    const trackingCount = position === 0 ? rng.int(1, 2) : rng.int(0, 2);
    for (let n = 0; n < trackingCount; n += 1) {
      out.add(
        'CollateralDocumentTracking',
        { ...collateralKeys, document_locator: documentLocator },
        trackingValues(
          rng,
          rng.pick(DOCUMENT_TRACKING_TEMPLATES),
          out.nextLocator(scoped('CollateralDocumentTracking')),
          documentDate,
        ),
      );
    }
  });

  const collateralDef = recordDef('Collateral');
  historyPostDates.forEach((postDate, position) => {
    const fieldName = COLLATERAL_HISTORY_FIELDS[position] ?? 'Value'; // then revaluations
    const field = fieldOf(collateralDef, fieldName);
    if (!field) throw new Error(`Collateral has no field ${fieldName}`);
    const { dataType, oldField, newField } = FM_DATA_TYPES[field.kind];
    const current = collateral[fieldName];
    out.add('CollateralFmHistory', collateralKeys, {
      SequenceNumber: position + 1,
      AccountNumber: account.accountNumber,
      RecordName: 'Collateral',
      RecordType: 0,
      FieldName: fieldName,
      FieldNumber: collateralDef.fields.indexOf(field) + 1,
      SubFieldNumber: 0,
      DataType: dataType,
      [oldField]: previousValue(rng, field.kind, current, kind.valueSources),
      [newField]: current,
      FmType: 1,
      Id: LOAN_ID,
      IdType: 1,
      Branch: account.branch,
      ConsoleNumber: rng.int(1, 99),
      BatchSequence: rng.int(1, 9999),
      ConfirmationSeq: rng.int(100_000, 999_999),
      PostDate: postDate,
      PostTime: rng.timeOfDay(8, 17) * 100 + rng.int(0, 59),
      ProcessorUser: rng.int(1, 250),
      UserNumber: rng.int(1, 250),
      SecurityLevels: rng.int(1, 10),
      UserOverride: 0,
      LastFmDate: postDate,
    });
  });

  const trackingCount = account.everyKind ? 2 : rng.int(0, 2);
  for (let n = 0; n < trackingCount; n += 1) {
    out.add(
      'CollateralTracking',
      collateralKeys,
      trackingValues(
        rng,
        rng.pick(COLLATERAL_TRACKING_TEMPLATES),
        out.nextLocator(scoped('CollateralTracking')),
        createDate,
      ),
    );
  }
}

// ---------------------------------------------------------------------------------------------------

/**
 * The joint owner of account `index`, if any: usually a new person of this account, sometimes a member
 * already (the primary owner of an earlier account), who then appears on both with the same SSN.
 */
function jointOwnerOf(rng: Random, index: number): { personId: number; isMember: boolean } | undefined {
  if (!rng.chance(0.35)) return undefined;
  if (index > 1 && rng.chance(0.3)) {
    const memberAccount = earlierAccount(rng, index, JOINT_OWNER_REACH);
    return { personId: memberAccount * PERSONS_PER_ACCOUNT + PERSON_SLOT.primary, isMember: true };
  }
  return { personId: index * PERSONS_PER_ACCOUNT + PERSON_SLOT.joint, isMember: false };
}

const BUSINESS_TRADES = [
  'PLUMBING',
  'LANDSCAPING',
  'DENTAL',
  'AUTO REPAIR',
  'BAKERY',
  'CONSULTING',
  'ELECTRIC',
] as const;
const ACCOUNT_TYPE = { individual: 0, joint: 1, business: 20 } as const;

/**
 * Every record of account `index` (1-based) of the dataset `seed`.
 * @example generateAccount(627, 42).records.Card // the cards of account 0000000042
 */
export function generateAccount(seed: number, index: number): AccountBundle {
  if (!Number.isInteger(index) || index < 1 || index > MAX_ACCOUNTS) {
    throw new Error(`account index must be an integer from 1 to ${MAX_ACCOUNTS}, got ${index}`);
  }
  const rng = Random.derive(seed, STREAM.account, index);
  const accountNumber = accountNumberOf(index);
  const everyKind = index === 1;
  const out = new AccountRecords();
  const keys = { account_number: accountNumber };

  const primary = personOf(seed, index * PERSONS_PER_ACCOUNT + PERSON_SLOT.primary);
  const openDate = rng.dateBetween(
    laterDate('1985-01-01', addDays(primary.birthDate, 18 * 366)),
    addDays(DATASET_AS_OF, -30),
  );
  const branch = rng.int(1, 8);
  const isBusiness = everyKind || rng.chance(0.08);
  const jointOwner = jointOwnerOf(rng, index);
  const shares = chooseShareProducts(rng, everyKind).map((product, position) => ({
    product,
    id: product.id,
    openDate: position === 0 ? openDate : rng.dateBetween(openDate, DATASET_AS_OF),
  }));
  const account: AccountFacts = {
    seed,
    index,
    accountNumber,
    openDate,
    branch,
    primary,
    shares,
    everyKind,
    ...(isBusiness ? { businessName: `${primary.last} ${rng.pick(BUSINESS_TRADES)}`.toUpperCase() } : {}),
  };

  out.add(
    'Account',
    {},
    {
      AccountNumber: accountNumber,
      Type: isBusiness ? ACCOUNT_TYPE.business : jointOwner ? ACCOUNT_TYPE.joint : ACCOUNT_TYPE.individual,
      Branch: branch,
      OpenDate: openDate,
    },
  );

  // Account-level names: share_id null.
  const accountNameKeys = { ...keys, share_id: null };
  out.add('ShareName', accountNameKeys, nameValues(primary, NAME_TYPE.primary, out.nextLocator('ShareName'), openDate));
  if (jointOwner) {
    const joint = personOf(seed, jointOwner.personId);
    // A new joint owner lives with the primary owner; an existing member keeps their own address.
    const household = jointOwner.isMember ? joint : { ...joint, address: primary.address };
    const since = rng.dateBetween(openDate, DATASET_AS_OF);
    out.add('ShareName', accountNameKeys, nameValues(household, NAME_TYPE.joint, out.nextLocator('ShareName'), since));
  }

  for (const share of shares) {
    const shareKeys = { ...keys, share_id: share.id };
    out.add('Share', keys, shareValues(rng, share));
    for (const plan of SHARE_CHILD_PLANS) {
      const chance = plan.chance(share);
      if (chance === 0 || !(everyKind || rng.chance(chance))) continue;
      const values = plan.build({ rng, account, share, locator: out.nextLocator(plan.record) });
      if (values) out.add(plan.record, shareKeys, values);
    }
  }

  addCards(out, rng, account);
  addHomeBanking(out, rng, account);
  addMicr(out, rng, account);
  addLookups(out, rng, account);
  addCorpTransfers(out, rng, account);
  const collateralCount = everyKind
    ? 1
    : rng.weighted([
        [0, 85],
        [1, 13],
        [2, 2],
      ] as const);
  for (let ordinal = 1; ordinal <= collateralCount; ordinal += 1) addCollateral(out, rng, account, ordinal);

  return { index, accountNumber, records: out.records };
}
