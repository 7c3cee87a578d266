/**
 * Configuration comes from the environment: documented defaults, and a clear error naming the variable
 * when a value is out of range or unknown, before anything starts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/http/app.js';
import { checkCredentialPolicy } from '../src/operations/credential-policy.js';
import { CREDENTIAL_KINDS } from '../src/contract/envelope.js';
import type { Secrets } from '../src/crypto/secrets.js';
import type { Db } from '../src/store/database.js';

test('without variables the documented defaults apply', () => {
  const config = loadConfig({});
  assert.equal(config.port, 8627);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.databaseUrl, undefined);
  assert.equal(config.databasePoolSize, 10);
  assert.equal(config.tokenCacheMs, 5_000);
});

test('COREGATE_DB_POOL sets the PostgreSQL connections per process', () => {
  assert.equal(loadConfig({ COREGATE_DB_POOL: '32' }).databasePoolSize, 32);
});

test('an out-of-range or non-integer value is refused, naming the variable and the range', () => {
  for (const value of ['0', '1001', '2.5', 'many']) {
    assert.throws(() => loadConfig({ COREGATE_DB_POOL: value }), {
      message: `COREGATE_DB_POOL must be an integer between 1 and 1000, got "${value}"`,
    });
  }
  assert.throws(() => loadConfig({ PORT: '70000' }), /PORT must be an integer between 0 and 65535/);
});

describe('COREGATE_CREDENTIALS_<SERVICE>', () => {
  const policyOf = (env: NodeJS.ProcessEnv) => loadConfig(env).credentialPolicy;

  test('a policy naming known services and credential kinds passes', () => {
    checkCredentialPolicy(
      policyOf({
        COREGATE_CREDENTIALS_FINDBY: 'AdministrativeCredentials, UserNumberCredentials',
        COREGATE_CREDENTIALS_ACCOUNT: 'AdministrativeCredentials,CardCredentials,MICRCredentials',
        COREGATE_CREDENTIALS_CORPTRANSFER: 'TokenCredentials',
        COREGATE_CREDENTIALS_COLLATERAL: 'UserNumberCredentials',
      }),
    );
  });

  test('an unknown service stops the start with one line naming the variable and the services allowed', () => {
    for (const service of ['FINDBYY', 'USERMANAGEMENT']) {
      assert.throws(
        () => checkCredentialPolicy(policyOf({ [`COREGATE_CREDENTIALS_${service}`]: 'AdministrativeCredentials' })),
        {
          message:
            `COREGATE_CREDENTIALS_${service}: unknown service "${service}"; allowed: COREGATE_CREDENTIALS_FINDBY, ` +
            'COREGATE_CREDENTIALS_CORPTRANSFER, COREGATE_CREDENTIALS_ACCOUNT, COREGATE_CREDENTIALS_COLLATERAL',
        },
      );
    }
  });

  test('an unknown credential kind stops the start with one line naming the variable and the kinds allowed', () => {
    for (const value of ['AdministrativeCredentials,CardCredential', 'AdministrativeCredentials,']) {
      const kind = value.split(',')[1];
      assert.throws(() => checkCredentialPolicy(policyOf({ COREGATE_CREDENTIALS_FINDBY: value })), {
        message: `COREGATE_CREDENTIALS_FINDBY: unknown credential kind "${kind}"; allowed: ${CREDENTIAL_KINDS.join(', ')}`,
      });
    }
  });

  test('the app refuses to build with a bad policy, before it touches the database', async () => {
    const config = loadConfig({ COREGATE_CREDENTIALS_COLLATERALS: 'AdministrativeCredentials' });
    await assert.rejects(
      buildApp({ db: {} as Db, secrets: {} as Secrets, config }),
      /^Error: COREGATE_CREDENTIALS_COLLATERALS: unknown service/,
    );
  });
});
