/**
 * Configuration comes from the environment: documented defaults, and a clear error naming the variable
 * when a value is out of range, before anything starts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../src/config.js';

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
