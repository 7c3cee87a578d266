/**
 * Checks an operation's result against its response schema at run time. `defineOperation` types the
 * result by the schema, but the catalog derives most response schemas at run time, where the compiler
 * cannot see them; with `COREGATE_CHECK_RESPONSES=true` (the test suite sets it) every answer is checked,
 * so a handler that drifts from the contract fails loudly instead of being silently trimmed by the
 * serializer.
 */
import type { TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import type { AnyOperation } from './types.js';

export class ResponseMismatchError extends Error {
  constructor(operation: AnyOperation, detail: string) {
    super(`the result of ${operation.family}:${operation.name} does not match its response schema: ${detail}`);
    this.name = 'ResponseMismatchError';
  }
}

/**
 * A checker over the shared schemas the responses refer to; each operation's validator is compiled on
 * its first answer.
 *
 * @example
 * const check = responseChecker(SHARED_SCHEMAS);
 * check(findBySSN, { AccountNumber: ['0000000001'], MessageId: 'findBySSN' }); // passes
 */
export function responseChecker(sharedSchemas: readonly TSchema[]): (operation: AnyOperation, result: unknown) => void {
  const context = Object.fromEntries(sharedSchemas.map((schema) => [(schema as { $id: string }).$id, schema]));
  const validators = new Map<AnyOperation, Validator>();
  return (operation, result) => {
    let validator = validators.get(operation);
    if (!validator) validators.set(operation, (validator = Compile(context, operation.response)));
    if (validator.Check(result)) return;
    const [first] = validator.Errors(result);
    throw new ResponseMismatchError(operation, first ? `${first.instancePath || '/'} ${first.message}` : 'no detail');
  };
}
