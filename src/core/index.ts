/**
 * The core every operation asks for its answer (core.ts), as the settings choose it: `COREGATE_CORE=store`
 * (coregate's own records, the default) or `COREGATE_CORE=symxchange` (gateway mode).
 */
import type { TSchema } from 'typebox';
import type { Config } from '../config.js';
import type { AnyOperation } from '../operations/types.js';
import type { Core } from './core.js';
import { storeCore } from './store-core.js';
import { symxchangeCore, type CoreLog } from './symxchange-core.js';
import { exchangeRecorder } from '../recording/recorder.js';

export {
  auditedCoreOutcome,
  type CircuitState,
  type Core,
  type CoreCall,
  type CoreOutcome,
  type CoreReadiness,
} from './core.js';
export { faultProblem, mayHaveBeenApplied, type CoreLog } from './symxchange-core.js';

export interface CoreOptions {
  readonly operations: readonly AnyOperation[];
  readonly schemas: readonly TSchema[];
  /** Told when a gateway core's circuit opens or closes again, for the log. */
  readonly onCircuit?: (sym: number, state: 'open' | 'closed', url: URL) => void;
  /** The log of what a gateway core's calls met: faults, bad answers, failures, cut lists (under the request id). */
  readonly log?: CoreLog;
}

/**
 * The configured core; throws at start for gateway settings that cannot work.
 * @example const core = createCore(config, { operations: OPERATIONS, schemas: SHARED_SCHEMAS });
 */
export function createCore(config: Config, options: CoreOptions): Core {
  if (config.core === 'store') return storeCore();
  return symxchangeCore({
    settings: config.symxchange!,
    operations: options.operations,
    schemas: options.schemas,
    listMaximum: config.listMaximum,
    pageMaximum: config.pageMaximum,
    onCircuit: options.onCircuit,
    log: options.log,
    recorder: config.recording && exchangeRecorder(config.recording, options.log),
  });
}
