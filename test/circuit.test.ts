/**
 * A core's circuit breaker (src/core/circuit.ts): failures that count, in a row, open it; an open circuit
 * refuses calls without making them until its time is up; then one call tries the core while the others wait
 * for it, and its outcome closes or opens the circuit again. Failures that do not count (the core answered)
 * and successes keep it closed. The clock is the test's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BrokenCircuitError, Circuit } from '../src/core/circuit.js';
import type { CircuitState } from '../src/core/core.js';

class Unreachable extends Error {}
class Answered extends Error {}

function circuit(failures = 3, halfOpenAfterMs = 1_000) {
  const clock = { now: 0 };
  const changes: CircuitState[] = [];
  const breaker = new Circuit({
    failures,
    halfOpenAfterMs,
    counts: (error) => error instanceof Unreachable,
    onChange: (state) => changes.push(state),
    now: () => clock.now,
  });
  let calls = 0;
  const call =
    <T>(outcome: () => T | Promise<T>) =>
    () => {
      calls += 1;
      return Promise.resolve().then(outcome);
    };
  const fail = call(() => {
    throw new Unreachable('refused');
  });
  const answer = call(() => 'answer');
  return { breaker, clock, changes, fail, answer, call, calls: () => calls };
}

describe('a closed circuit', () => {
  test('passes each call through and answers its outcome', async () => {
    const { breaker, answer, calls } = circuit();
    assert.equal(await breaker.execute(answer), 'answer');
    assert.equal(breaker.state, 'closed');
    assert.equal(calls(), 1);
  });

  test('opens after as many failures in a row that count as it is set to, and not before', async () => {
    const { breaker, fail, changes } = circuit(3);
    await assert.rejects(breaker.execute(fail), Unreachable);
    await assert.rejects(breaker.execute(fail), Unreachable);
    assert.equal(breaker.state, 'closed');
    await assert.rejects(breaker.execute(fail), Unreachable);
    assert.equal(breaker.state, 'open');
    assert.deepEqual(changes, ['open']);
  });

  test('a success between failures starts their count again', async () => {
    const { breaker, fail, answer } = circuit(3);
    for (let round = 0; round < 3; round += 1) {
      await assert.rejects(breaker.execute(fail), Unreachable);
      await assert.rejects(breaker.execute(fail), Unreachable);
      await breaker.execute(answer);
    }
    assert.equal(breaker.state, 'closed');
  });

  test('failures that do not count (the core answered) never open it', async () => {
    const { breaker, call } = circuit(2);
    const answered = call(() => {
      throw new Answered('a fault');
    });
    for (let i = 0; i < 5; i += 1) await assert.rejects(breaker.execute(answered), Answered);
    assert.equal(breaker.state, 'closed');
  });

  test('a call that throws before it returns a promise fails as one that rejects, and counts', async () => {
    const { breaker } = circuit(1);
    const throwsAtOnce = () => {
      throw new Unreachable('refused');
    };
    await assert.rejects(breaker.execute(throwsAtOnce), Unreachable);
    assert.equal(breaker.state, 'open');
  });
});

describe('an open circuit', () => {
  test('refuses calls without making them until its time is up', async () => {
    const { breaker, clock, fail, answer, calls } = circuit(1, 1_000);
    await assert.rejects(breaker.execute(fail), Unreachable);
    clock.now = 999;
    await assert.rejects(breaker.execute(answer), BrokenCircuitError);
    assert.equal(calls(), 1, 'the refused call was not made');
  });

  test('then lets one call try the core; its success closes the circuit', async () => {
    const { breaker, clock, fail, answer, changes } = circuit(1, 1_000);
    await assert.rejects(breaker.execute(fail), Unreachable);
    clock.now = 1_000;
    const trial = breaker.execute(answer);
    assert.equal(breaker.state, 'half_open');
    assert.equal(await trial, 'answer');
    assert.equal(breaker.state, 'closed');
    assert.deepEqual(changes, ['open', 'half_open', 'closed']);
  });

  test('a trial that fails and counts opens it again, for another full time', async () => {
    const { breaker, clock, fail, answer } = circuit(1, 1_000);
    await assert.rejects(breaker.execute(fail), Unreachable);
    clock.now = 1_000;
    await assert.rejects(breaker.execute(fail), Unreachable);
    assert.equal(breaker.state, 'open');
    clock.now = 1_999;
    await assert.rejects(breaker.execute(answer), BrokenCircuitError);
    clock.now = 2_000;
    assert.equal(await breaker.execute(answer), 'answer');
  });

  test('a trial the core answers with a failure that does not count closes it', async () => {
    const { breaker, clock, fail, call } = circuit(1, 1_000);
    await assert.rejects(breaker.execute(fail), Unreachable);
    clock.now = 1_000;
    const answered = call(() => {
      throw new Answered('a fault');
    });
    await assert.rejects(breaker.execute(answered), Answered);
    assert.equal(breaker.state, 'closed');
  });

  test('calls while one tries the core wait for it: made once it closed, refused once it opened again', async () => {
    const { breaker, clock, fail, call, calls } = circuit(1, 1_000);
    await assert.rejects(breaker.execute(fail), Unreachable);
    clock.now = 1_000;
    let finishTrial!: () => void;
    const trialHeld = new Promise<void>((resolve) => (finishTrial = resolve));
    const trial = breaker.execute(call(() => trialHeld.then(() => 'trial')));
    const waiting = breaker.execute(call(() => 'waited'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(calls(), 2, 'the waiting call is not made while the trial runs');
    finishTrial();
    assert.equal(await trial, 'trial');
    assert.equal(await waiting, 'waited');
    assert.equal(calls(), 3);

    await assert.rejects(breaker.execute(fail), Unreachable);
    clock.now = 2_000;
    let failTrial!: () => void;
    const failing = new Promise<void>((resolve) => (failTrial = resolve));
    const secondTrial = breaker.execute(
      call(async () => {
        await failing;
        throw new Unreachable('refused');
      }),
    );
    const refused = breaker.execute(call(() => 'never'));
    failTrial();
    await assert.rejects(secondTrial, Unreachable);
    await assert.rejects(refused, BrokenCircuitError);
    assert.equal(calls(), 5, 'the call that waited on a failed trial was not made');
  });
});

test('a circuit needs at least one failure to open', () => {
  assert.throws(() => new Circuit({ failures: 0, halfOpenAfterMs: 1, counts: () => true }), RangeError);
});
