/**
 * The search query language (DESIGN, "Lists, paging, search"): grammar, typing against the catalog,
 * error positions, the SQL it compiles to, and its results on each database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
  type RawBuilder,
} from 'kysely';
import {
  CONTROL_CHARACTER,
  INT4_MAX,
  INT4_MIN,
  RECORDS,
  recordDef,
  type FieldDef,
  type RecordDef,
} from '../src/catalog/index.js';
import { compileQuery, formatQuery, parseQuery, QUERY_LIMITS, QueryError } from '../src/query/index.js';
import { insertRows, toRow, type WireRecord } from '../src/store/records.js';
import { sampleValue } from './support/field-values.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';

const HOLD = recordDef('CollateralCollHold');
const COLLATERAL = '7000000011';

/** Compiles SQL without a database, to read the text and parameters a query produces. */
const compiler = new Kysely<unknown>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

function compiledSql(query: string, record: RecordDef = HOLD): { sql: string; parameters: readonly unknown[] } {
  const condition = compileQuery(query, record);
  assert.ok(condition, `"${query}" compiles to a condition`);
  const { sql: text, parameters } = condition.compile(compiler);
  return { sql: text, parameters };
}

/** The query with explicit grouping, as the parser read it. */
const grouped = (query: string) => formatQuery(parseQuery(query)!);

/** Asserts that the query fails with a QueryError at `position` whose message matches. */
function assertQueryError(query: string, position: number, message: RegExp, record: RecordDef = HOLD): void {
  assert.throws(
    () => compileQuery(query, record),
    (error: unknown) => {
      assert.ok(error instanceof QueryError, `expected a QueryError, got ${String(error)}`);
      assert.match(error.message, message);
      assert.equal(error.position, position, error.message);
      assert.ok(error.message.endsWith(`at position ${position}`), error.message);
      return true;
    },
  );
}

/**
 * The only SQL text a query may produce: the record's quoted columns, the whitelisted operators and
 * keywords, parentheses and `$n` placeholders with their casts.
 */
function sqlWhitelist(record: RecordDef): RegExp {
  const columns = record.fields.map((f) => f.column).join('|');
  return new RegExp(
    `^(?:\\s+|\\(|\\)|"(?:${columns})"|\\$\\d+(?:::(?:integer|numeric|date))?|<>|<=|>=|=|<|>|and|or|not|is|null)*$`,
  );
}

/** Asserts the compiled text is whitelisted and its placeholders are exactly $1..$n of the parameters. */
function assertParameterized(query: string, record: RecordDef): void {
  const { sql: text, parameters } = compiledSql(query, record);
  assert.match(text, sqlWhitelist(record));
  const placeholders = [...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
  assert.deepEqual(
    placeholders,
    parameters.map((_, i) => i + 1),
  );
}

/** Runs `check`; a QueryError is an acceptable outcome, anything else thrown fails the property. */
function acceptingQueryErrors(query: string, check: () => void): void {
  try {
    check();
  } catch (error) {
    if (!(error instanceof QueryError)) throw error;
    assert.ok(error.position >= 0 && error.position <= query.length, `position ${error.position} within the query`);
  }
}

// ---- Generators of well-formed queries, from the catalog ----

const searchable = (record: RecordDef) => record.fields.filter((f) => !f.repeating && !f.protection);
const spacing = fc.constantFrom(' ', '  ', '\t', '\n ');
const anyCase = (word: string) => fc.constantFrom(word, word.toLowerCase(), word[0] + word.slice(1).toLowerCase());
const quoted = (text: string) => `'${text.replaceAll("'", "''")}'`;
const decimalText = fc.stringMatching(/^-?[0-9]{1,13}(\.[0-9]{1,4})?$/);

/** A literal of the field's kind, as a client would write it. */
function literalFor(field: FieldDef): fc.Arbitrary<string> {
  switch (field.kind) {
    case 'string':
      return fc
        .oneof(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.constantFrom("O'Brien", '\\', "''", '--', '/* */'))
        .filter((text) => !CONTROL_CHARACTER.test(text))
        .map(quoted);
    case 'integer':
      return fc.integer({ min: INT4_MIN, max: INT4_MAX }).map(String);
    case 'money':
    case 'rate':
      return decimalText;
    case 'date':
      return fc
        .tuple(
          fc.date({
            min: new Date('0001-01-01T00:00:00Z'),
            max: new Date('9999-12-31T00:00:00Z'),
            noInvalidDate: true,
          }),
          fc.constantFrom('{date:', '{ date : ', '{DATE:'),
        )
        .map(([day, open]) => `${open}'${day.toISOString().slice(0, 10)}'}`);
  }
}

function comparisonFor(record: RecordDef): fc.Arbitrary<string> {
  return fc.constantFrom(...searchable(record)).chain((field) =>
    fc.oneof(
      fc
        .tuple(fc.constantFrom('=', '<>', '!=', '<', '<=', '>', '>='), literalFor(field))
        .map(([operator, literal]) => `${field.name} ${operator} ${literal}`),
      fc
        .tuple(fc.constantFrom('=', '<>'), anyCase('NULL'))
        .map(([operator, nul]) => `${field.name} ${operator} ${nul}`),
    ),
  );
}

/** A random well-formed, type-correct query over a record's fields. */
function queryFor(record: RecordDef): fc.Arbitrary<string> {
  const { query } = fc.letrec<{ query: string }>((tie) => ({
    query: fc.oneof(
      { maxDepth: 4, depthSize: 'small' },
      comparisonFor(record),
      fc
        .tuple(tie('query'), spacing, anyCase('AND'), anyCase('OR'), fc.boolean(), tie('query'), fc.boolean())
        .map(([left, space, and, or, isAnd, right, parenthesized]) => {
          const joined = `${left}${space}${isAnd ? and : or}${space}${right}`;
          return parenthesized ? `(${joined})` : joined;
        }),
      fc.tuple(anyCase('NOT'), tie('query')).map(([not, operand]) => `${not} (${operand})`),
    ),
  }));
  return query;
}

/** Fragments of queries, right and wrong, for token soup. */
const TOKENS = [
  ['Amount', 'EffectiveDate', 'Id', 'IdType', 'Locator', 'Amout', 'amount'],
  ['=', '<>', '!=', '<', '<=', '>', '>=', '==', 'AND', 'or', 'Not', '(', ')'],
  ['NULL', '12', '-3', '12.5', '-0.25', '1.', '.5', "'text'", "'O''B'", "'", "''"],
  ["{date:'2024-01-31'}", "{date:'2023-02-30'}", '{date:', '{', '}'],
  ['-', ';', '--', '/*', '*/', '\\', '"', '$1', '\u2019', '\u0000', '\n', ''],
].flat();
const token = fc.constantFrom(...TOKENS);
const tokenSoup = fc
  .array(fc.tuple(token, fc.constantFrom('', ' ')), { maxLength: 25 })
  .map((parts) => parts.map(([text, space]) => text + space).join(''));

/** Well-formed queries with a few characters cut or tokens pasted in: near misses, some still valid. */
const nearMiss = fc
  .tuple(queryFor(HOLD), fc.array(fc.tuple(fc.nat(), fc.nat({ max: 3 }), token), { maxLength: 3 }))
  .map(([query, edits]) =>
    edits.reduce((text, [at, cut, pasted]) => {
      const position = at % (text.length + 1);
      return text.slice(0, position) + pasted + text.slice(position + cut);
    }, query),
  );
const garbledQuery = fc.oneof(tokenSoup, nearMiss);

// ---- Grammar ----

describe('query grammar', () => {
  test('AND binds tighter than OR', () => {
    assert.equal(grouped('A = 1 OR B = 2 AND C = 3'), '(A = 1 OR (B = 2 AND C = 3))');
    assert.equal(grouped('A = 1 AND B = 2 OR C = 3'), '((A = 1 AND B = 2) OR C = 3)');
  });

  test('AND and OR associate to the left', () => {
    assert.equal(grouped('A = 1 OR B = 2 OR C = 3'), '((A = 1 OR B = 2) OR C = 3)');
    assert.equal(grouped('A = 1 AND B = 2 AND C = 3'), '((A = 1 AND B = 2) AND C = 3)');
  });

  test('NOT binds tighter than AND and applies to one comparison or group', () => {
    assert.equal(grouped('NOT A = 1 AND B = 2'), '((NOT A = 1) AND B = 2)');
    assert.equal(grouped('NOT NOT A = 1'), '(NOT (NOT A = 1))');
    assert.equal(grouped('NOT (A = 1 OR B = 2)'), '(NOT (A = 1 OR B = 2))');
  });

  test('parentheses override precedence', () => {
    assert.equal(grouped('(A = 1 OR B = 2) AND C = 3'), '((A = 1 OR B = 2) AND C = 3)');
    assert.equal(grouped('((((A = 1))))'), 'A = 1');
  });

  test('every comparison operator is read, and != means <>', () => {
    for (const [written, operator] of [
      ['=', '='],
      ['<>', '<>'],
      ['!=', '<>'],
      ['<', '<'],
      ['<=', '<='],
      ['>', '>'],
      ['>=', '>='],
    ] as const) {
      assert.deepEqual(parseQuery(`Amount ${written} 1`), {
        kind: 'comparison',
        field: 'Amount',
        position: 0,
        operator,
        value: { type: 'integer', value: '1', position: 8 + written.length },
      });
    }
  });

  test('every literal kind is read with its value', () => {
    const cases = [
      ['12', 'integer', '12'],
      ['-3', 'integer', '-3'],
      ['12.5', 'decimal', '12.5'],
      ['-0.25', 'decimal', '-0.25'],
      ["'text'", 'string', 'text'],
      ["''", 'string', ''],
      ["'O''Brien'", 'string', "O'Brien"],
      ["''''", 'string', "'"],
      ["'back\\slash'", 'string', 'back\\slash'],
      ["{date:'2024-01-31'}", 'date', '2024-01-31'],
      ["{ DATE :\t'2024-02-29' }", 'date', '2024-02-29'],
      ['NULL', 'null', ''],
      ['null', 'null', ''],
    ] as const;
    for (const [written, type, value] of cases) {
      const tree = parseQuery(`X = ${written}`);
      assert.deepEqual(tree?.kind === 'comparison' && tree.value, { type, value, position: 4 }, written);
    }
  });

  test('keywords are case-insensitive and whitespace is free', () => {
    assert.equal(grouped("a = 1 and b = 'x' Or not c = null"), "((a = 1 AND b = 'x') OR (NOT c = NULL))");
    assert.equal(grouped("\n\tA>=-3 AnD(B<>'x')\n"), "(A >= -3 AND B <> 'x')");
  });

  test('an empty or blank query is no filter', () => {
    for (const query of ['', '   ', '\n\t ']) {
      assert.equal(parseQuery(query), undefined);
      assert.equal(compileQuery(query, HOLD), undefined);
    }
  });

  test('a formatted query reads back to the same tree', () => {
    fc.assert(
      fc.property(queryFor(HOLD), (query) => {
        const formatted = grouped(query);
        assert.equal(grouped(formatted), formatted);
      }),
    );
  });
});

// ---- Errors ----

describe('query errors name the position of the offending token', () => {
  test('a comparison without a value', () => {
    assertQueryError('Amount >', 8, /^expected a value after '>', found the end of the query/);
    assertQueryError('Amount > AND', 9, /expected a value after '>', found AND/);
  });

  test('an unterminated string', () => {
    assertQueryError("Amount = 1 OR Id = 'abc", 19, /^unterminated string starting at position 19$/);
    assertQueryError("Id = 'it''s", 5, /unterminated string/);
  });

  test('an unbalanced parenthesis', () => {
    assertQueryError('Amount = 1)', 10, /^unexpected '\)'/);
    assertQueryError('(Amount = 1', 11, /expected '\)' to close the '\(' at position 0, found the end of the query/);
    assertQueryError('()', 1, /unexpected '\)'/);
  });

  test('a missing operator, field or connective', () => {
    assertQueryError('Amount 1', 7, /expected =, <>, <, <=, > or >= after Amount, found 1/);
    assertQueryError('= 1', 0, /expected a field name, found '='/);
    assertQueryError('12 = Amount', 0, /expected a field name, found 12/);
    assertQueryError('Amount = 1 AND', 14, /expected a field name, found the end of the query/);
    assertQueryError("Amount = 1 Id = 'x'", 11, /expected AND, OR or the end of the query, found Id/);
  });

  test('a character outside the language', () => {
    assertQueryError('Amount = 1; drop table x', 10, /unexpected character ';'/);
    assertQueryError('Amount = 1 -- comment', 11, /unexpected character '-'/);
    assertQueryError('Amount = 1 /* c */', 11, /unexpected character '\/'/);
    assertQueryError('Id = \u2019x\u2019', 5, /unexpected character '\u2019'/);
    assertQueryError('Id\u0000= 1', 2, /unexpected character U\+0000/);
  });

  test('a malformed number', () => {
    assertQueryError('Amount = 12abc', 9, /malformed number/);
    assertQueryError('Amount = 1.', 9, /malformed number/);
    assertQueryError('Amount = 1.2.3', 9, /malformed number/);
  });

  test('NULL with an ordering operator', () => {
    assertQueryError('Amount > NULL', 7, /'>' cannot compare with NULL; use = NULL or <> NULL/);
  });

  test('a malformed or impossible date', () => {
    assertQueryError("EffectiveDate = {date:'2023-02-30'}", 22, /'2023-02-30' is not a calendar date/);
    assertQueryError("EffectiveDate = {date:'2024-1-31'}", 22, /not a calendar date/);
    assertQueryError("EffectiveDate = {day:'2024-01-31'}", 16, /expected a date written \{date:'YYYY-MM-DD'\}/);
    assertQueryError("EffectiveDate = {date:'2024-01-31'", 34, /expected '\}' to close the date/);
  });

  test('a control character or half of a surrogate pair in a string', () => {
    assertQueryError("Id = 'a\u0000b'", 5, /must not contain control characters/);
    assertQueryError("Id = 'a\ud800b'", 5, /must not contain an unpaired UTF-16 surrogate/);
  });

  test('a value of the wrong type for the field', () => {
    assertQueryError(
      "Amount > 'x'",
      9,
      /^Amount is a money field and takes a number such as 12 or 12.50, found a string/,
    );
    assertQueryError(
      'IdType = 12.5',
      9,
      /IdType is an integer field and takes a whole number such as 12, found a decimal/,
    );
    assertQueryError("Amount = {date:'2024-01-31'}", 9, /Amount is a money field .* found a date/);
    assertQueryError('EffectiveDate = 20240131', 16, /EffectiveDate is a date field and takes a date such as/);
    assertQueryError('Id = 12', 5, /Id is a string field; write '12'/);
  });

  test('a plain string on a date field suggests the date literal', () => {
    assertQueryError(
      "EffectiveDate = '2024-01-31'",
      16,
      /^EffectiveDate is a date field; write \{date:'2024-01-31'\} at position 16$/,
    );
  });

  test('an integer beyond the column type', () => {
    assertQueryError(`Locator = ${INT4_MAX + 1}`, 10, /out of range for the integer field Locator/);
    assert.ok(compileQuery(`Locator = ${INT4_MIN}`, HOLD));
  });

  test('an unknown field, with a suggestion when one is close', () => {
    assertQueryError('Amout = 1', 0, /^unknown field Amout of CollateralCollHold \(did you mean Amount\?\)/);
    assertQueryError('amount = 1', 0, /did you mean Amount\?/);
    assertQueryError('Amount = 1 OR Balance = 1', 14, /^unknown field Balance of CollateralCollHold at position 14$/);
  });

  test('protected and repeating fields cannot be searched', () => {
    assertQueryError("Ssn = '123456789'", 0, /Ssn is protected/, recordDef('ShareName'));
    assertQueryError("Text = 'x'", 0, /Text is a repeating field/, recordDef('ShareNote'));
  });

  test('syntax errors are reported before type errors', () => {
    assertQueryError('Bogus = 1 AND', 13, /expected a field name/);
  });

  test(`a query of more than ${QUERY_LIMITS.length} characters`, () => {
    const padded = (length: number) => `Amount = 1${' '.repeat(length - 10)}`;
    assert.ok(compileQuery(padded(QUERY_LIMITS.length), HOLD));
    assertQueryError(padded(QUERY_LIMITS.length + 1), QUERY_LIMITS.length, /exceeds the limit of 2000 characters/);
  });

  test(`nesting deeper than ${QUERY_LIMITS.depth} levels`, () => {
    const parenthesized = (depth: number) => `${'('.repeat(depth)}Amount = 1${')'.repeat(depth)}`;
    assert.ok(compileQuery(parenthesized(QUERY_LIMITS.depth), HOLD));
    assertQueryError(parenthesized(QUERY_LIMITS.depth + 1), QUERY_LIMITS.depth, /nests deeper than 32 levels/);
    const negated = (depth: number) => `${'NOT '.repeat(depth)}Amount = 1`;
    assert.ok(compileQuery(negated(QUERY_LIMITS.depth), HOLD));
    assertQueryError(negated(QUERY_LIMITS.depth + 1), 4 * QUERY_LIMITS.depth, /nests deeper/);
  });

  test(`more than ${QUERY_LIMITS.comparisons} comparisons`, () => {
    const comparisons = (count: number) => Array.from({ length: count }, () => 'Locator = 1').join(' OR ');
    assert.ok(compileQuery(comparisons(QUERY_LIMITS.comparisons), HOLD));
    const position = QUERY_LIMITS.comparisons * 'Locator = 1 OR '.length;
    assertQueryError(comparisons(QUERY_LIMITS.comparisons + 1), position, /more than 100 comparisons/);
  });
});

// ---- SQL ----

describe('compiled SQL', () => {
  test('comparisons become columns, whitelisted operators and cast parameters', () => {
    assert.deepEqual(compiledSql("Amount > 100 AND EffectiveDate >= {date:'2024-01-01'}"), {
      sql: '(("amount" > $1::numeric) and ("effective_date" >= $2::date))',
      parameters: ['100', '2024-01-01'],
    });
  });

  test('strings are parameters whatever they contain, and integers are cast to integer', () => {
    assert.deepEqual(compiledSql("NOT (Id = 'O''B' OR IdType != 3)"), {
      sql: '(not (("id" = $1) or ("id_type" <> $2::integer)))',
      parameters: ["O'B", '3'],
    });
  });

  test('NULL compiles to IS NULL and IS NOT NULL without a parameter', () => {
    assert.deepEqual(compiledSql('Amount = NULL OR ExpirationDate <> null'), {
      sql: '(("amount" is null) or ("expiration_date" is not null))',
      parameters: [],
    });
  });

  test('numbers travel as written, so no float rounding', () => {
    assert.deepEqual(
      compiledSql('UserRate1 <= 4.125 AND UserAmount1 = 9999999999999.99', recordDef('CollateralTracking')),
      {
        sql: '(("user_rate1" <= $1::numeric) and ("user_amount1" = $2::numeric))',
        parameters: ['4.125', '9999999999999.99'],
      },
    );
  });

  test("a field's column is the catalog's, not its name's snake case", () => {
    assert.deepEqual(compiledSql("Number = '7000000011'", recordDef('Collateral')), {
      sql: '("collateral_number" = $1)',
      parameters: ['7000000011'],
    });
  });
});

// ---- Robustness ----

describe('query robustness', () => {
  const checkCompiles = (query: string) => acceptingQueryErrors(query, () => void compileQuery(query, HOLD));

  test('any text either compiles or fails with a QueryError', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 60 }), checkCompiles), { numRuns: 500 });
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 60 }), checkCompiles), { numRuns: 500 });
    fc.assert(fc.property(garbledQuery, checkCompiles), { numRuns: 2000 });
  });

  test('injection attempts fail or stay in the parameters', () => {
    const payloads = [
      "'; drop table x; --",
      '1 OR 1=1',
      '1; delete from collateral_coll_hold',
      '1 /* comment */',
      '-- comment',
      '\u2019 OR \u2018a\u2019=\u2018a',
      "\\' OR 1=1 --",
      '\\',
      '$1',
      '$$ drop $$',
      "E'\\x27'",
      '"amount"',
      'Amount) OR (1=1',
      '1::text',
      "{date:'2024-01-01'}); drop table x; --",
      "'||(select 1)||'",
      'NULL; select 1',
      "U&'\\0027'",
    ];
    const prefixes = ['Amount = ', 'Id = ', "Id = '", 'Amount = 1 OR ', '(', 'NOT ', "EffectiveDate = {date:'"];
    const attempt = fc
      .tuple(
        fc.constantFrom(...prefixes),
        fc.constantFrom(...payloads),
        fc.constantFrom('', "'", ')', ' AND Amount = 1'),
      )
      .map(([prefix, payload, suffix]) => prefix + payload + suffix);
    fc.assert(
      fc.property(attempt, (query) => acceptingQueryErrors(query, () => assertParameterized(query, HOLD))),
      { numRuns: 500 },
    );
    // Written as string literals, every payload compiles and reaches the database only as a parameter.
    for (const payload of payloads) {
      const { sql: text, parameters } = compiledSql(`Id = ${quoted(payload)} OR AccountNumber <> ${quoted(payload)}`);
      assert.equal(text, '(("id" = $1) or ("account_number" <> $2))');
      assert.deepEqual(parameters, [payload, payload]);
    }
  });

  test('well-formed queries over any record compile to whitelisted SQL', () => {
    const searchableRecords = RECORDS.filter((r) => searchable(r).length > 0);
    fc.assert(
      fc.property(
        fc.constantFrom(...searchableRecords).chain((record) => fc.tuple(fc.constant(record), queryFor(record))),
        ([record, query]) => assertParameterized(query, record),
      ),
      { numRuns: 300 },
    );
  });
});

// ---- Results on each database ----

const HOLDS: readonly WireRecord[] = [
  { Locator: 1, Amount: 50, EffectiveDate: '2023-12-15', AccountNumber: '0000000001', Id: '0001', IdType: 1 },
  { Locator: 2, Amount: 150, EffectiveDate: '2024-01-01', AccountNumber: '0000000002', Id: '0002', IdType: 2 },
  { Locator: 3, Amount: 250.5, EffectiveDate: '2024-03-31', AccountNumber: '0000000001', Id: "O'B", IdType: 1 },
  { Locator: 4, Amount: null, EffectiveDate: null, AccountNumber: '0000000003', Id: null, IdType: 0 },
  { Locator: 5, Amount: -10, EffectiveDate: '2024-02-29', AccountNumber: '0000000002', Id: '0005', IdType: 2 },
];
/** A hold of another collateral that matches every query below: the condition must not leak past its parentheses. */
const OTHER_HOLD: WireRecord = {
  Locator: 1,
  Amount: 999,
  EffectiveDate: '2024-06-01',
  AccountNumber: '0000000001',
  Id: '0001',
  IdType: 1,
};

/** One row in every record's table, from the catalog, so generated queries have something to evaluate. */
async function insertOneRowEach(h: Harness): Promise<void> {
  const keyValue = { 'varchar(10)': '7000000099', 'varchar(4)': '0001', integer: 1, date: '2024-01-01' } as const;
  for (const record of RECORDS.filter((r) => r !== HOLD)) {
    const keys = Object.fromEntries(record.keyColumns.map((k) => [k.column, keyValue[k.sqlType]]));
    const values = Object.fromEntries(record.fields.map((f) => [f.name, sampleValue(f)]));
    await insertRows(h.database.db, record, [toRow(record, values, keys, h.secrets)]);
  }
}

for (const backend of BACKENDS) {
  describe(`query results on ${backend.name}`, () => {
    let h: Harness;
    before(async () => {
      h = await createHarness(backend);
      const holdRows = (collateral: string, holds: readonly WireRecord[]) =>
        holds.map((hold) => toRow(HOLD, hold, { collateral_number: collateral }, h.secrets));
      await insertRows(h.database.db, HOLD, [...holdRows(COLLATERAL, HOLDS), ...holdRows('7000000022', [OTHER_HOLD])]);
      await insertOneRowEach(h);
    });
    after(() => h.close());

    async function locators(query: string): Promise<number[]> {
      const condition = compileQuery(query, HOLD);
      assert.ok(condition);
      const { rows } = await sql<{ locator: number }>`select locator from collateral_coll_hold
        where collateral_number = ${COLLATERAL} and ${condition} order by locator`.execute(h.database.db);
      return rows.map((row) => row.locator);
    }

    const expectations: readonly (readonly [string, readonly number[]])[] = [
      ["Amount > 100 AND EffectiveDate >= {date:'2024-01-01'}", [2, 3]],
      ['Amount = 250.5', [3]],
      ['Amount >= 150 AND Amount <= 250.50', [2, 3]],
      ["Amount < 0 OR AccountNumber = '0000000001'", [1, 3, 5]],
      ["AccountNumber != '0000000001'", [2, 4, 5]],
      ["EffectiveDate = {date:'2024-02-29'}", [5]],
      ["EffectiveDate < {date:'2024-01-01'} OR EffectiveDate > {date:'2024-03-01'}", [1, 3]],
      ["Id = 'O''B'", [3]],
      ['IdType = 2 AND NOT Amount < 0', [2]],
      ['Locator <> 3 AND (IdType = 1 OR IdType = 0)', [1, 4]],
      ['Amount = NULL', [4]],
      ['Amount <> NULL', [1, 2, 3, 5]],
    ];
    for (const [query, expected] of expectations) {
      test(`${query} selects ${expected.join(', ')}`, async () => {
        assert.deepEqual(await locators(query), expected);
      });
    }

    test('NOT follows SQL: a NULL value matches neither a comparison nor its negation', async () => {
      assert.deepEqual(await locators('Amount > 100'), [2, 3]);
      assert.deepEqual(await locators('NOT (Amount > 100)'), [1, 5]);
    });

    test('string comparison is case-sensitive', async () => {
      assert.deepEqual(await locators("Id = 'o''b'"), []);
    });

    test('injection payloads written as strings match nothing and harm nothing', async () => {
      assert.deepEqual(await locators("Id = '''; delete from collateral_coll_hold; --' OR Id = '1 OR 1=1'"), []);
      assert.deepEqual(await locators('Locator > 0'), [1, 2, 3, 4, 5]);
    });

    const execute = (record: RecordDef, condition: RawBuilder<unknown>) =>
      sql`select count(*) from ${sql.table(record.table)} where ${condition}`.execute(h.database.db);

    test('random well-formed queries over any record execute', async () => {
      const searchableRecords = RECORDS.filter((r) => searchable(r).length > 0);
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...searchableRecords).chain((record) => fc.tuple(fc.constant(record), queryFor(record))),
          async ([record, query]) => {
            await execute(record, compileQuery(query, record)!);
          },
        ),
        { numRuns: 200 },
      );
    });

    test('garbled queries that still compile execute', async () => {
      await fc.assert(
        fc.asyncProperty(garbledQuery, async (query) => {
          let condition: RawBuilder<unknown> | undefined;
          acceptingQueryErrors(query, () => (condition = compileQuery(query, HOLD)));
          if (condition) await execute(HOLD, condition);
        }),
        { numRuns: 300 },
      );
    });
  });
}
