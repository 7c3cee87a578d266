/**
 * A process's copy of the fault-injection switch (src/store/fault-injection.ts): read from the store at most
 * once per refresh interval. `knownOff` lets a call skip the fault rules without waiting while the copy says
 * off and is fresh; a stale copy, or one that says on, sends the call to `isOn`, which reads the store again.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FaultInjectionSwitch, faultInjection } from '../src/store/fault-injection.js';
import { openTestDatabase, type TestDatabase } from './support/harness.js';

let database: TestDatabase;
before(async () => {
  database = await openTestDatabase({});
});
after(() => database?.close());

const REFRESH_MS = 200;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('off and freshly read: known off; past the refresh interval it is not, until read again', async () => {
  await faultInjection.set(database.db, false);
  const copy = new FaultInjectionSwitch(database.db, true, REFRESH_MS);
  assert.equal(copy.knownOff(), false, 'never read: not known');
  assert.equal(await copy.isOn(), false);
  assert.equal(copy.knownOff(), true);
  await sleep(REFRESH_MS + 20);
  assert.equal(copy.knownOff(), false, 'stale: the call must ask again');
  assert.equal(await copy.isOn(), false);
  assert.equal(copy.knownOff(), true);
});

test('switched on in the store by another process: seen within the refresh interval, and never known off then', async () => {
  await faultInjection.set(database.db, false);
  const copy = new FaultInjectionSwitch(database.db, false, REFRESH_MS);
  assert.equal(await copy.isOn(), false);
  await faultInjection.set(database.db, true);
  await sleep(REFRESH_MS + 20);
  assert.equal(copy.knownOff(), false);
  assert.equal(await copy.isOn(), true);
  assert.equal(copy.knownOff(), false);
});

test('switched on by this process: at once', async () => {
  await faultInjection.set(database.db, false);
  const copy = new FaultInjectionSwitch(database.db, false, REFRESH_MS);
  assert.equal(await copy.isOn(), false);
  await copy.set(true);
  assert.equal(copy.knownOff(), false);
  assert.equal(await copy.isOn(), true);
});
