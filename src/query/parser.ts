/**
 * The grammar of search queries, by recursive descent over the lexer's tokens:
 *
 *   query      := or-expr? end
 *   or-expr    := and-expr ('OR' and-expr)*
 *   and-expr   := unary ('AND' unary)*
 *   unary      := 'NOT' unary | '(' or-expr ')' | comparison
 *   comparison := Field ('=' | '<>' | '!=' | '<' | '<=' | '>' | '>=') literal
 *   literal    := 12 | -3 | 12.5 | 'text' | {date:'2024-01-31'} | NULL     (NULL only with = and <>)
 *
 * Keywords (AND, OR, NOT, NULL, and `date` in a date literal) are case-insensitive, field names are not;
 * whitespace may go anywhere between tokens and inside a date literal's braces. Parsing knows nothing of the catalog: fields are
 * resolved and typed when the tree is compiled for a record.
 */
import {
  failAt,
  QUERY_LIMITS,
  tokenize,
  type ComparisonOperator,
  type Connective,
  type Literal,
  type Token,
} from './lexer.js';

export interface Comparison {
  readonly kind: 'comparison';
  readonly field: string;
  /** Where the field name starts. */
  readonly position: number;
  readonly operator: ComparisonOperator;
  readonly value: Literal;
}

export type QueryNode =
  | Comparison
  | { readonly kind: 'and' | 'or'; readonly left: QueryNode; readonly right: QueryNode }
  | { readonly kind: 'not'; readonly operand: QueryNode };

/** A token for an error message: punctuation quoted, words and literals as written. */
function describe(token: Token): string {
  if (token.kind === 'end') return 'the end of the query';
  return token.kind === 'operator' || token.kind === '(' || token.kind === ')' ? `'${token.text}'` : token.text;
}

const isConnective = (token: Token, connective: Connective) =>
  token.kind === 'connective' && token.connective === connective;

/** Parser state over one query's tokens. Recursion is bounded by the nesting limit. */
class Parser {
  private index = 0;
  private depth = 0;
  private comparisons = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  private get token(): Token {
    // The last token is `end`, and the parser never moves past it.
    return this.tokens[Math.min(this.index, this.tokens.length - 1)]!;
  }

  private advance(): Token {
    const token = this.token;
    if (token.kind !== 'end') this.index += 1;
    return token;
  }

  query(): QueryNode | undefined {
    if (this.token.kind === 'end') return undefined;
    const tree = this.or();
    const rest = this.token;
    if (rest.kind === ')') failAt(rest.position, "unexpected ')'");
    if (rest.kind !== 'end') failAt(rest.position, 'expected AND, OR or the end of the query', describe(rest));
    return tree;
  }

  private or(): QueryNode {
    let left = this.and();
    while (isConnective(this.token, 'OR')) {
      this.advance();
      left = { kind: 'or', left, right: this.and() };
    }
    return left;
  }

  private and(): QueryNode {
    let left = this.unary();
    while (isConnective(this.token, 'AND')) {
      this.advance();
      left = { kind: 'and', left, right: this.unary() };
    }
    return left;
  }

  private unary(): QueryNode {
    const token = this.token;
    if (isConnective(token, 'NOT')) {
      this.advance();
      return this.nested(token, () => ({ kind: 'not', operand: this.unary() }));
    }
    if (token.kind === '(') {
      this.advance();
      return this.nested(token, () => {
        const inner = this.or();
        const close = this.token;
        if (close.kind !== ')') {
          failAt(close.position, `expected ')' to close the '(' at position ${token.position}`, describe(close));
        }
        this.advance();
        return inner;
      });
    }
    return this.comparison();
  }

  /** Runs `parse` one nesting level deeper: NOT and parentheses count, against the depth limit. */
  private nested(opening: Token, parse: () => QueryNode): QueryNode {
    this.depth += 1;
    if (this.depth > QUERY_LIMITS.depth) {
      failAt(opening.position, `the query nests deeper than ${QUERY_LIMITS.depth} levels`);
    }
    const node = parse();
    this.depth -= 1;
    return node;
  }

  private comparison(): Comparison {
    const field = this.advance();
    if (field.kind === ')') failAt(field.position, "unexpected ')'");
    if (field.kind !== 'field') failAt(field.position, 'expected a field name', describe(field));
    this.comparisons += 1;
    if (this.comparisons > QUERY_LIMITS.comparisons) {
      failAt(field.position, `the query has more than ${QUERY_LIMITS.comparisons} comparisons`);
    }
    const operator = this.advance();
    if (operator.kind !== 'operator') {
      failAt(operator.position, `expected =, <>, <, <=, > or >= after ${field.name}`, describe(operator));
    }
    const value = this.advance();
    if (value.kind !== 'literal') failAt(value.position, `expected a value after '${operator.text}'`, describe(value));
    if (value.literal.type === 'null' && operator.operator !== '=' && operator.operator !== '<>') {
      failAt(operator.position, `'${operator.text}' cannot compare with NULL; use = NULL or <> NULL`);
    }
    return {
      kind: 'comparison',
      field: field.name,
      position: field.position,
      operator: operator.operator,
      value: value.literal,
    };
  }
}

/**
 * The syntax tree of a query; undefined for an empty or blank query (no filter). Throws QueryError.
 * @example parseQuery("Amount > 100 AND Id = 'A1'")?.kind // 'and'
 */
export function parseQuery(query: string): QueryNode | undefined {
  return new Parser(tokenize(query)).query();
}

function formatLiteral(literal: Literal): string {
  switch (literal.type) {
    case 'integer':
    case 'decimal':
      return literal.value;
    case 'string':
      return `'${literal.value.replaceAll("'", "''")}'`;
    case 'date':
      return `{date:'${literal.value}'}`;
    case 'null':
      return 'NULL';
  }
}

/**
 * A tree written back as a query with every compound expression parenthesized, so grouping shows.
 * @example formatQuery(parseQuery('A = 1 OR B = 2 AND NOT C = 3')!) // '(A = 1 OR (B = 2 AND (NOT C = 3)))'
 */
export function formatQuery(node: QueryNode): string {
  switch (node.kind) {
    case 'comparison':
      return `${node.field} ${node.operator} ${formatLiteral(node.value)}`;
    case 'not':
      return `(NOT ${formatQuery(node.operand)})`;
    case 'and':
    case 'or':
      return `(${formatQuery(node.left)} ${node.kind.toUpperCase()} ${formatQuery(node.right)})`;
  }
}
