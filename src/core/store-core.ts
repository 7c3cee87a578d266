/**
 * The store core: coregate's own records answer every operation (the default; the sandbox, the demo and
 * the test double of a real core). It serves the spec's Sym, 627.
 */
import { DEFAULT_SYM } from '../config.js';
import type { Core } from './core.js';

/**
 * @example const core = storeCore(); await core.answer(findBySSN, context, body, { requestId, sym: 627 });
 */
export function storeCore(): Core {
  return {
    kind: 'store',
    syms: [DEFAULT_SYM],
    verifiesCredentials: false,
    answer: (operation, context, body) => operation.handle(context, body),
    readiness: () => ({ ready: true, detail: 'store' }),
    circuits: () => new Map(),
    close: async () => undefined,
  };
}
