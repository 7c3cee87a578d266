/**
 * Who may hold the server's connections (src/security/connection-share.ts), as a policy over plain
 * connections: each address holds at most its share; past the cap, the address holding the most gives way,
 * oldest connection first, never one being answered; a newcomer from the address holding the most is refused.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConnectionShare } from '../src/security/connection-share.js';

interface Held {
  readonly name: string;
  answering: boolean;
}

/** A share with the given limits, and a way to open named connections from an address. */
function share(max: number, perAddress: number) {
  const connections = new ConnectionShare<Held>(
    { max, perAddress, trustedProxies: ['10.9.0.0/16'] },
    (held) => held.answering,
  );
  const open = (name: string, from: string, answering = false) => {
    const held = { name, answering };
    return { held, closed: connections.admit(held, from)?.name };
  };
  return { connections, open };
}

describe('the connections a client address may hold', () => {
  test('an address past its share has its new connection closed; another address is not', () => {
    const { open } = share(100, 2);
    assert.equal(open('a1', '10.0.0.1').closed, undefined);
    assert.equal(open('a2', '10.0.0.1').closed, undefined);
    assert.equal(open('a3', '10.0.0.1').closed, 'a3');
    assert.equal(open('b1', '10.0.0.2').closed, undefined);
  });

  test('a released connection frees its place in the share', () => {
    const { connections, open } = share(100, 1);
    const { held } = open('a1', '10.0.0.1');
    connections.release(held);
    assert.equal(open('a2', '10.0.0.1').closed, undefined);
  });

  test('a trusted proxy has no share', () => {
    const { open } = share(100, 1);
    for (let i = 0; i < 5; i += 1) assert.equal(open(`p${i}`, '10.9.1.1').closed, undefined);
  });
});

describe('the connection cap', () => {
  test('past it, the oldest connection of the address holding the most gives way to another address', () => {
    const { open } = share(4, 0);
    open('a1', '10.0.0.1');
    open('a2', '10.0.0.1');
    open('a3', '10.0.0.1');
    open('b1', '10.0.0.2');
    assert.equal(open('c1', '10.0.0.3').closed, 'a1');
  });

  test('a connection being answered never gives way; the next oldest of its address does', () => {
    const { open } = share(3, 0);
    open('a1', '10.0.0.1', true);
    open('a2', '10.0.0.1');
    open('b1', '10.0.0.2');
    assert.equal(open('c1', '10.0.0.3').closed, 'a2');
  });

  test('when every connection of the largest holder is being answered, the next largest gives way', () => {
    const { open } = share(5, 0);
    open('a1', '10.0.0.1', true);
    open('a2', '10.0.0.1', true);
    open('a3', '10.0.0.1', true);
    open('b1', '10.0.0.2');
    open('b2', '10.0.0.2');
    assert.equal(open('c1', '10.0.0.3').closed, 'b1');
  });

  test('a new connection of the address holding the most is itself closed', () => {
    const { open } = share(3, 0);
    open('a1', '10.0.0.1');
    open('a2', '10.0.0.1');
    open('b1', '10.0.0.2');
    assert.equal(open('a3', '10.0.0.1').closed, 'a3');
  });

  test('among addresses holding as many, the newcomer is closed rather than another', () => {
    const { open } = share(2, 0);
    open('a1', '10.0.0.1');
    open('b1', '10.0.0.2');
    assert.equal(open('c1', '10.0.0.3').closed, 'c1');
  });

  test('a connection that gave way is no longer counted', () => {
    const { connections, open } = share(2, 0);
    open('a1', '10.0.0.1');
    open('a2', '10.0.0.1');
    const b1 = open('b1', '10.0.0.2');
    assert.equal(b1.closed, 'a1');
    connections.release(b1.held);
    assert.equal(open('c1', '10.0.0.3').closed, undefined, 'a2 and c1 are within the cap');
  });
});
