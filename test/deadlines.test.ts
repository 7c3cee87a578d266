/**
 * Core calls' deadlines on one timer (src/core/deadlines.ts): a deadline tells its listener once it has
 * passed, never before; one ended early tells nobody; deadlines of different lengths pass in their order.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { DeadlineWheel } from '../src/core/deadlines.js';

// The wheel's timer keeps no process alive (a call in flight has its socket for that): this test's loop does.
const alive = setInterval(() => undefined, 1_000);
after(() => clearInterval(alive));

const passed = (deadline: { onExpire(listener: () => void): void }) =>
  new Promise<number>((resolve) => deadline.onExpire(() => resolve(performance.now())));

test('a deadline tells its listener once its time has passed, never before', async () => {
  const wheel = new DeadlineWheel();
  const started = performance.now();
  const deadline = wheel.start(30);
  assert.equal(deadline.expired, false);
  const at = await passed(deadline);
  assert.ok(at - started >= 30, `passed after ${at - started} ms`);
  assert.equal(deadline.expired, true);
});

test('a deadline that has passed tells a listener given later at once', async () => {
  const wheel = new DeadlineWheel();
  const deadline = wheel.start(1);
  await passed(deadline);
  let told = false;
  deadline.onExpire(() => (told = true));
  assert.equal(told, true);
});

test('a released deadline tells nobody, and the others still pass', async () => {
  const wheel = new DeadlineWheel();
  const released = wheel.start(5);
  let told = false;
  released.onExpire(() => (told = true));
  released.release();
  released.release();
  const later = wheel.start(20);
  await passed(later);
  assert.equal(told, false);
  assert.equal(released.expired, false);
});

test('deadlines of different lengths pass in the order of their times', async () => {
  const wheel = new DeadlineWheel();
  const order: string[] = [];
  const long = wheel.start(40);
  const short = wheel.start(10);
  const middle = wheel.start(25);
  const all = [
    passed(long).then(() => order.push('long')),
    passed(short).then(() => order.push('short')),
    passed(middle).then(() => order.push('middle')),
  ];
  await Promise.all(all);
  assert.deepEqual(order, ['short', 'middle', 'long']);
});

test('a listener replaced or removed is not told', async () => {
  const wheel = new DeadlineWheel();
  const deadline = wheel.start(5);
  const told: string[] = [];
  deadline.onExpire(() => told.push('first'));
  deadline.onExpire(undefined);
  const end = wheel.start(15);
  await passed(end);
  assert.deepEqual(told, []);
  assert.equal(deadline.expired, true);
});
