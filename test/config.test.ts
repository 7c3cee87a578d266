/**
 * Configuration comes from the environment: documented defaults, and a clear error naming the variable
 * when a value is out of range or unknown, before anything starts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig, type Config } from '../src/config.js';
import { buildApp } from '../src/http/app.js';
import { checkCredentialPolicy } from '../src/operations/credential-policy.js';
import { CREDENTIAL_KINDS } from '../src/contract/envelope.js';
import type { Secrets } from '../src/crypto/secrets.js';
import type { Db } from '../src/database/database.js';

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

test('streamed exports: two at once per process, and a client that reads nothing for 30 s is cut off', () => {
  const defaults = loadConfig({});
  assert.deepEqual([defaults.exportConcurrency, defaults.exportStallMs], [2, 30_000]);
  const set = loadConfig({ COREGATE_EXPORT_CONCURRENCY: '4', COREGATE_EXPORT_STALL_MS: '5000' });
  assert.deepEqual([set.exportConcurrency, set.exportStallMs], [4, 5_000]);
  assert.throws(() => loadConfig({ COREGATE_EXPORT_CONCURRENCY: '0' }), {
    message: 'COREGATE_EXPORT_CONCURRENCY must be an integer between 1 and 1000, got "0"',
  });
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
      buildApp({ db: {} as Db, databaseKind: 'pglite', secrets: {} as Secrets, config }),
      /^Error: COREGATE_CREDENTIALS_COLLATERALS: unknown service/,
    );
  });
});

describe('settings of the log, the metrics, the sandbox and the database, checked before anything starts', () => {
  test('LOG_LEVEL is one of pino’s levels; anything else is one line naming the variable', () => {
    assert.equal(loadConfig({}).logLevel, 'info');
    assert.equal(loadConfig({ LOG_LEVEL: 'debug' }).logLevel, 'debug');
    assert.throws(() => loadConfig({ LOG_LEVEL: 'verbose' }), {
      message: 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
    });
  });

  test('LOG_FORMAT is json (the default) or pretty', () => {
    assert.equal(loadConfig({}).logFormat, 'json');
    assert.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
    assert.throws(() => loadConfig({ LOG_FORMAT: 'colour' }), {
      message: 'LOG_FORMAT must be one of json, pretty, got "colour"',
    });
  });

  test('COREGATE_METRICS is open (the default), token or off', () => {
    assert.equal(loadConfig({}).metrics, 'open');
    assert.equal(loadConfig({ COREGATE_METRICS: 'token' }).metrics, 'token');
    assert.throws(() => loadConfig({ COREGATE_METRICS: 'public' }), {
      message: 'COREGATE_METRICS must be one of open, token, off, got "public"',
    });
  });

  test('COREGATE_SANDBOX_FAULTS is off unless turned on', () => {
    assert.equal(loadConfig({}).sandboxFaults, false);
    assert.equal(loadConfig({ COREGATE_SANDBOX_FAULTS: 'on' }).sandboxFaults, true);
    assert.equal(loadConfig({ COREGATE_SANDBOX_FAULTS: 'true' }).sandboxFaults, true);
    assert.equal(loadConfig({ COREGATE_SANDBOX_FAULTS: 'off' }).sandboxFaults, false);
    assert.throws(() => loadConfig({ COREGATE_SANDBOX_FAULTS: 'yes' }), {
      message: 'COREGATE_SANDBOX_FAULTS must be true or false, got "yes"',
    });
  });

  test('every switch takes true and false, and still on and off', () => {
    const switches = [
      ['COREGATE_SANDBOX_FAULTS', (config: Config) => config.sandboxFaults],
      ['COREGATE_AUDIT', (config: Config) => config.auditEnabled],
      ['COREGATE_CHECK_RESPONSES', (config: Config) => config.checkResponses],
      ['COREGATE_TRACE_ACCOUNT_NUMBERS', (config: Config) => config.tracing.accountNumbers],
    ] as const;
    for (const [name, value] of switches) {
      for (const [given, expected] of [
        ['true', true],
        ['on', true],
        ['false', false],
        ['off', false],
      ] as const) {
        assert.equal(value(loadConfig({ [name]: given })), expected, `${name}=${given}`);
      }
      assert.throws(() => loadConfig({ [name]: 'yes' }), { message: `${name} must be true or false, got "yes"` });
    }
  });

  test('DATABASE_URL must be a postgres:// URL, and a refusal never repeats the value (it may hold a password)', () => {
    assert.equal(
      loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/core' }).databaseUrl,
      'postgres://u:p@db:5432/core',
    );
    assert.equal(loadConfig({ DATABASE_URL: 'postgresql://db/core' }).databaseUrl, 'postgresql://db/core');
    assert.equal(loadConfig({ DATABASE_URL: '' }).databaseUrl, undefined);
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'mysql://u:s3cret@db/core' }),
      (error: Error) => {
        assert.equal(
          error.message,
          'DATABASE_URL must be a postgres:// URL (postgres://user:password@host:5432/database); it starts with "mysql:"',
        );
        return true;
      },
    );
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'u:s3cret@db/core' }),
      (error: Error) => {
        assert.match(error.message, /^DATABASE_URL must be a postgres:\/\/ URL/);
        assert.ok(!error.message.includes('s3cret'));
        return true;
      },
    );
  });
});

describe('the edge settings', () => {
  test('COREGATE_TRUSTED_PROXIES takes addresses and CIDR ranges, and refuses anything else naming it', () => {
    assert.deepEqual(loadConfig({}).trustedProxies, []);
    assert.deepEqual(loadConfig({ COREGATE_TRUSTED_PROXIES: '10.0.0.5, 10.1.0.0/16,fd00::/8' }).trustedProxies, [
      '10.0.0.5',
      '10.1.0.0/16',
      'fd00::/8',
    ]);
    for (const wrong of ['lb.example', '10.0.0.0/33', '10.0.0.1/8/2', 'fd00::/129', '']) {
      assert.throws(() => loadConfig({ COREGATE_TRUSTED_PROXIES: `10.0.0.5,${wrong}` }), {
        message: `COREGATE_TRUSTED_PROXIES must be a comma-separated list of IP addresses or CIDR ranges, got "${wrong}"`,
      });
    }
  });

  test('COREGATE_PUBLIC_URL is an http or https URL without query, fragment or credentials', () => {
    assert.equal(loadConfig({}).publicUrl, undefined);
    assert.equal(
      loadConfig({ COREGATE_PUBLIC_URL: 'https://api.example.com/core' }).publicUrl?.href,
      'https://api.example.com/core',
    );
    for (const wrong of [
      'api.example.com',
      'ftp://api.example.com',
      'https://api.example.com/?a=1',
      'https://u:p@api.example.com',
    ])
      assert.throws(
        () => loadConfig({ COREGATE_PUBLIC_URL: wrong }),
        /^Error: COREGATE_PUBLIC_URL must be an http:\/\/ or https:\/\/ URL/,
      );
  });

  test('COREGATE_MAX_CONNECTIONS_PER_ADDRESS is 256 by default, 0 turns it off', () => {
    assert.equal(loadConfig({}).maxConnectionsPerAddress, 256);
    assert.equal(loadConfig({ COREGATE_MAX_CONNECTIONS_PER_ADDRESS: '0' }).maxConnectionsPerAddress, 0);
    assert.throws(
      () => loadConfig({ COREGATE_MAX_CONNECTIONS_PER_ADDRESS: '-1' }),
      /COREGATE_MAX_CONNECTIONS_PER_ADDRESS must be an integer/,
    );
  });
});
