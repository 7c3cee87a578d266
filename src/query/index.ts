/**
 * The search query language of search operations (DESIGN, "Lists, paging, search"): SymXchange-style
 * `Field op value` comparisons joined by AND, OR, NOT and parentheses, typed by the catalog and compiled
 * to parameterized SQL. A QueryError becomes 400 `INVALID_QUERY`.
 *
 * @example
 * const condition = compileQuery("Amount > 100 AND EffectiveDate >= {date:'2024-01-01'}", recordDef('CollateralCollHold'));
 * const rows = await sql`select locator from collateral_coll_hold where ${condition ?? sql`true`}`.execute(db);
 */
export { compileBounds, compileQuery, type DateBound } from './compile.js';
export { QUERY_LIMITS, QueryError, type ComparisonOperator, type Literal, type LiteralType } from './lexer.js';
export { formatQuery, parseQuery, type Comparison, type QueryNode } from './parser.js';
