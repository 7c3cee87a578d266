/**
 * Route validators and serializers are compiled on their route's first use (src/http/lazy-compilers.ts),
 * by Fastify's own compilers: the same answers, only later.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import AjvCompiler from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { lazySerializers, lazyValidators } from '../src/http/lazy-compilers.js';

type Compile = (route: object) => unknown;
type Factory = (externalSchemas: unknown, options: unknown) => Compile;

/** Fastify's factory, counting the routes it compiles. */
function counting(factory: Factory): { factory: Factory; compiled: () => number } {
  let compiled = 0;
  return {
    factory: (externalSchemas, options) => {
      const compile = factory(externalSchemas, options);
      return (route) => {
        compiled += 1;
        return compile(route);
      };
    },
    compiled: () => compiled,
  };
}

const route = (schema: object) => ({ schema, method: 'POST', url: '/x', httpPart: 'body', httpStatus: '200' });

test('a validator is compiled at its first validation, once, and its errors are where Fastify reads them', () => {
  const ajv = counting(AjvCompiler() as unknown as Factory);
  const build = lazyValidators(ajv.factory as never) as unknown as Factory;
  const validate = build(
    {},
    { customOptions: { allErrors: true } },
  )(route({ type: 'object', properties: { SSN: { type: 'string', pattern: '^[0-9]{9}$' } }, required: ['SSN'] })) as ((
    data: unknown,
  ) => boolean) & { errors?: { instancePath: string }[] | null };
  assert.equal(ajv.compiled(), 0, 'nothing compiled before the first use');
  assert.equal(validate({ SSN: '12345' }), false);
  assert.equal(validate.errors?.[0]?.instancePath, '/SSN');
  assert.equal(validate({ SSN: '123456789' }), true);
  assert.equal(validate.errors, null, 'a valid body clears the errors');
  assert.equal(ajv.compiled(), 1);
});

test('a serializer is compiled at its first answer, once, and writes what Fastify would', () => {
  const stringify = counting(SerializerSelector() as unknown as Factory);
  const build = lazySerializers(stringify.factory as never) as unknown as Factory;
  const serialize = build(
    {},
    {},
  )(route({ type: 'object', properties: { AccountNumber: { type: 'array', items: { type: 'string' } } } })) as (
    data: unknown,
  ) => string;
  assert.equal(stringify.compiled(), 0, 'nothing compiled before the first use');
  assert.equal(serialize({ AccountNumber: ['0000000005'], Extra: 1 }), '{"AccountNumber":["0000000005"]}');
  assert.equal(serialize({ AccountNumber: [] }), '{"AccountNumber":[]}');
  assert.equal(stringify.compiled(), 1);
});
