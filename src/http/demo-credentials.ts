/**
 * The demo's passwords, for /docs to fill its examples in after Authorize (`GET /admin/demo-credentials`):
 * never written into a document anyone may read.
 */
import type { DemoCredentials } from '../contract/admin.js';
import { Problem } from '../contract/problems.js';
import { verifyPassword } from '../crypto/passwords.js';
import type { Db } from '../database/database.js';
import type { Authenticator } from '../security/authenticator.js';
import { demoDataset, users } from '../store/access.js';
import { EXAMPLE_USER_NUMBER } from './openapi-examples.js';

/**
 * Of the demo set-up's passwords (`given`, read from demo-credentials.json at start), those that open this
 * store now: it holds a demo dataset (the demo set-up, `coregate seed` and `coregate reset` mark it; an
 * import of other records forgets it), and each is still the administrative password, or the password of
 * the examples' user. None is a 404 NOT_FOUND: an operator's own passwords are never answered. /docs asks
 * for them (`GET /admin/demo-credentials`, scope admin) to fill in its examples.
 */
export async function demoCredentials(
  db: Db,
  authenticator: Authenticator,
  given: DemoCredentials,
): Promise<DemoCredentials> {
  const none = new Problem(404, 'NOT_FOUND', 'This store holds no demo dataset whose passwords are still in force');
  if (!(await demoDataset.get(db))) throw none;
  const { adminPassword, userPassword } = given;
  const admin = adminPassword !== undefined && (await authenticator.isAdminPassword(adminPassword));
  const user = userPassword === undefined ? undefined : await users.find(db, EXAMPLE_USER_NUMBER);
  const demoUser =
    user !== undefined && userPassword !== undefined && (await verifyPassword(userPassword, user.passwordHash));
  if (!admin && !demoUser) throw none;
  return { ...(admin ? { adminPassword } : {}), ...(demoUser ? { userPassword } : {}) };
}
