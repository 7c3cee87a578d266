/**
 * The configured credential policy (`COREGATE_CREDENTIALS_<SERVICE>`, see config.ts), checked before the
 * service starts: a misspelt service or credential kind would otherwise be ignored, or accept nothing,
 * without a word.
 */
import type { Config } from '../config.js';
import { CREDENTIAL_KINDS } from '../contract/envelope.js';
import { OPERATIONS } from './index.js';

const POLICY_PREFIX = 'COREGATE_CREDENTIALS_';

/** Services whose credential kinds are configurable: every service but session management (always UserNumber, then Token). */
export const CONFIGURABLE_SERVICES: readonly string[] = [
  ...new Set(OPERATIONS.filter((operation) => !operation.fixedCredentials).map((operation) => operation.service)),
];

/**
 * Throws one line naming the variable and the allowed values when the policy names an unknown service
 * or credential kind.
 *
 * @example
 * checkCredentialPolicy({ findby: ['AdministrativeCredentials', 'CardCredential'] });
 * // Error: COREGATE_CREDENTIALS_FINDBY: unknown credential kind "CardCredential"; allowed: AdministrativeCredentials, …
 */
export function checkCredentialPolicy(policy: Config['credentialPolicy']): void {
  for (const [service, kinds] of Object.entries(policy)) {
    const variable = `${POLICY_PREFIX}${service.toUpperCase()}`;
    if (!CONFIGURABLE_SERVICES.includes(service)) {
      const allowed = CONFIGURABLE_SERVICES.map((name) => `${POLICY_PREFIX}${name.toUpperCase()}`).join(', ');
      throw new Error(`${variable}: unknown service "${service.toUpperCase()}"; allowed: ${allowed}`);
    }
    for (const kind of kinds ?? []) {
      if (!(CREDENTIAL_KINDS as readonly string[]).includes(kind)) {
        throw new Error(`${variable}: unknown credential kind "${kind}"; allowed: ${CREDENTIAL_KINDS.join(', ')}`);
      }
    }
  }
}
