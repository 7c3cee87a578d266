/**
 * OpenAPI 3.1 document options: generated from the route schemas, shared schemas as components.
 */
import type { SwaggerOptions } from '@fastify/swagger';

export function openApiOptions(): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'coregate: Core Account Records Service',
        version: '0.1.0',
        description:
          'HTTP+JSON gateway to credit-union core records: FindBy lookups, corporate transfers, share updates ' +
          'and collateral records. Every operation is a POST with a JSON body carrying `Credentials`, and needs ' +
          '`Authorization: Bearer <token>`. Errors are RFC 9457 problem details with a stable `code`.',
      },
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API token from `coregate token create`' },
        },
      },
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  };
}
