/**
 * The people of the demo dataset: names, SSNs, addresses, phones, e-mail, dates of birth, occupations and
 * identity documents, each person drawn from (seed, person id) alone, and the ShareName values that put a
 * person on an account or a share. Also who the joint owner of an account is.
 */
import type { WireRecord } from '../store/records.js';
import { DATASET_AS_OF, STREAM, entries } from './dataset.js';
import { earlierAccount, ssnOf } from './numbering.js';
import { Random, addDays, addMonths, laterDate } from './random.js';

/** Person ids: each account owns four (primary owner, joint owner, two share-level names). */
export const PERSONS_PER_ACCOUNT = 4;
/** Which of an account's person ids is which (the share-level names take slots 2 and 3). */
export const PERSON_SLOT = { primary: 0, joint: 1, shareName: 2 } as const;

/** How far back a joint owner may reach (keeps the pairs close in small datasets). */
const JOINT_OWNER_REACH = 30;

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

/** A person's postal address, with the area code of their city. */
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

/** One person of the dataset, who may appear on several accounts (same SSN everywhere). */
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

/**
 * A person from (seed, person id) alone, so another account can refer to the same person.
 * @example personOf(627, 42 * PERSONS_PER_ACCOUNT + PERSON_SLOT.primary) // account 42's primary owner
 */
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

/**
 * The joint owner of account `index`, if any: usually a new person of this account, sometimes a member
 * already (the primary owner of an earlier account), who then appears on both with the same SSN.
 */
export function jointOwnerOf(rng: Random, index: number): { personId: number; isMember: boolean } | undefined {
  if (!rng.chance(0.35)) return undefined;
  if (index > 1 && rng.chance(0.3)) {
    const memberAccount = earlierAccount(rng, index, JOINT_OWNER_REACH);
    return { personId: memberAccount * PERSONS_PER_ACCOUNT + PERSON_SLOT.primary, isMember: true };
  }
  return { personId: index * PERSONS_PER_ACCOUNT + PERSON_SLOT.joint, isMember: false };
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
export const NAME_TYPE = { primary: 0, joint: 1, beneficiary: 2 } as const;

/**
 * The ShareName values that put `person` on an account or share as `type` (a NAME_TYPE) since `since`.
 * @example nameValues(person, NAME_TYPE.primary, 1, '2010-05-03').ShortName // 'SMITH J'
 */
export function nameValues(person: Person, type: number, locator: number, since: string): WireRecord {
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
