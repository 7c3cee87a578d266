/**
 * Schema compilers that build each route's body validator (Ajv) and answer serializer
 * (fast-json-stringify) on the route's first use instead of when the route is added. coregate has about
 * two hundred operation routes and a deployment calls a few dozen of them: compiling all of them at start
 * cost seconds and tens of MB of generated code that a process kept for its lifetime. Fastify's own
 * compilers do the work, with the same options and shared schemas; only the moment changes. A schema that
 * cannot be compiled therefore fails at its first request; every route's schemas are compiled by the test
 * suites, which call every operation.
 */
import AjvCompiler from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

/** The factories as Fastify's options type them (their declared types name a schema where a route definition comes). */
type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

type ValidatorFactory = (externalSchemas: unknown, options: unknown) => ValidatorCompiler;
type ValidatorCompiler = (route: { schema?: unknown }) => Validate;
type Validate = ((data: unknown) => unknown) & { errors?: unknown };

type SerializerFactory = (externalSchemas: unknown, options: unknown) => SerializerCompiler;
type SerializerCompiler = (route: { schema?: unknown }) => (data: unknown) => string;

/**
 * Fastify's Ajv compiler, building each validator when it first validates. The validator's `errors` are
 * copied onto the function Fastify holds, where it reads them.
 */
export function lazyValidators(
  factory = AjvCompiler() as unknown as ValidatorFactory,
): NonNullable<CompilersFactory['buildValidator']> {
  const lazy: ValidatorFactory = (externalSchemas, options) => {
    const compile = factory(externalSchemas, options);
    return (route) => {
      let validate: Validate | undefined;
      const validateOnFirstUse: Validate = (data) => {
        validate ??= compile(route);
        const valid = validate(data);
        validateOnFirstUse.errors = validate.errors;
        return valid;
      };
      return validateOnFirstUse;
    };
  };
  return lazy as unknown as NonNullable<CompilersFactory['buildValidator']>;
}

/** Fastify's fast-json-stringify compiler, building each serializer when it first serializes. */
export function lazySerializers(
  factory = SerializerSelector() as unknown as SerializerFactory,
): NonNullable<CompilersFactory['buildSerializer']> {
  const lazy: SerializerFactory = (externalSchemas, options) => {
    const compile = factory(externalSchemas, options);
    return (route) => {
      let serialize: ((data: unknown) => string) | undefined;
      return (data) => (serialize ??= compile(route))(data);
    };
  };
  return lazy as unknown as NonNullable<CompilersFactory['buildSerializer']>;
}
