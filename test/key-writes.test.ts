/**
 * The changes to Idempotency-Keys a gateway keeps while its database is away (store/key-writes.ts): written
 * as soon as the database takes them, oldest first, one per key (the latest), at most `capacity` of them;
 * a change the database refuses for itself is not retried. The database here is a change that fails as an
 * unreachable one does until the test says it is back; the end-to-end behaviour against a real cluster is
 * test/gateway-database-outage.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyWrites, type KeyWritesEvent } from '../src/store/key-writes.js';

/** What pg raises while the server refuses connections. */
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

function setup(capacity = 10) {
  let away = true;
  const written: string[] = [];
  const events: KeyWritesEvent[] = [];
  const writes = new KeyWrites({ capacity, retryMs: 5, retryMaxMs: 20, onEvent: (event) => events.push(event) });
  const change = (label: string) => async () => {
    if (away) throw refused();
    written.push(label);
  };
  return {
    writes,
    written,
    events,
    change,
    back: () => (away = false),
  };
}

const settled = async (writes: KeyWrites) => {
  for (let i = 0; i < 200 && writes.size > 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('changes to keys kept while the database is away', () => {
  test('a change the database takes at once is written, and nothing is kept', async () => {
    const { writes, written, change, back } = setup();
    back();
    assert.equal(await writes.run('caller', 'k1', change('k1 released')), true);
    assert.deepEqual(written, ['k1 released']);
    assert.equal(writes.size, 0);
  });

  test('kept while away, written oldest first once the database is back; the latest change of a key wins', async () => {
    const { writes, written, events, change, back } = setup();
    assert.equal(await writes.run('caller', 'k1', change('k1 released')), false);
    assert.equal(await writes.run('caller', 'k2', change('k2 answered')), false);
    assert.equal(await writes.run('caller', 'k1', change('k1 answered')), false);
    assert.equal(writes.size, 2);
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.deepEqual(written, [], 'nothing while the database is away');
    back();
    await settled(writes);
    assert.deepEqual(written, ['k2 answered', 'k1 answered']);
    assert.equal(events.filter((event) => event.kind === 'waiting').length, 1, 'the run of failures told once');
    assert.deepEqual(events.at(-1), { kind: 'written', written: 2 });
  });

  test('at most `capacity` keys wait: past it the oldest is given up, and named', async () => {
    const { writes, written, events, change, back } = setup(2);
    for (const key of ['k1', 'k2', 'k3']) await writes.run('caller', key, change(key));
    assert.equal(writes.size, 2);
    assert.deepEqual(
      events.filter((event) => event.kind === 'given-up'),
      [{ kind: 'given-up', owner: 'caller', key: 'k1' }],
    );
    back();
    await settled(writes);
    assert.deepEqual(written, ['k2', 'k3']);
  });

  test('a change refused for itself is not kept: it fails as it did', async () => {
    const { writes } = setup();
    const wrong = async () => {
      throw Object.assign(new Error('value too long for type character varying(255)'), { code: '22001' });
    };
    await assert.rejects(writes.run('caller', 'k1', wrong), /value too long/);
    assert.equal(writes.size, 0);
  });

  test('closing tries once more, then gives up what still waits', async () => {
    const away = setup();
    await away.writes.run('caller', 'k1', away.change('k1'));
    await away.writes.close();
    assert.equal(away.writes.size, 0);
    assert.deepEqual(
      away.events.filter((event) => event.kind === 'given-up'),
      [{ kind: 'given-up', owner: 'caller', key: 'k1' }],
    );
    const back = setup();
    await back.writes.run('caller', 'k1', back.change('k1'));
    back.back();
    await back.writes.close();
    assert.deepEqual(back.written, ['k1']);
  });
});
