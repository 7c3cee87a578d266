/**
 * Reading an OpenAPI document as the suites that check it do: following a `$ref`, and finding the ones that
 * name no component.
 */

/** A JSON document walked by path. */
export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- a JSON document walked by path

/**
 * An object of the document, following a `$ref` to a component.
 * @example resolveRef(document, { $ref: '#/components/schemas/Problem' }).type // 'object'
 */
export function resolveRef(document: Json, object: Json): Json {
  if (typeof object.$ref !== 'string') return object;
  return (object.$ref as string)
    .replace('#/', '')
    .split('/')
    .reduce((parent: Json, key: string) => parent[key], document);
}

/** The `$ref`s of a document, as it was sent, that name no component of it (none, for a sound document). */
export function unresolvedRefs(body: string): string[] {
  const document = JSON.parse(body) as Json;
  return [...body.matchAll(/"\$ref":"([^"]+)"/g)]
    .map((match) => match[1]!)
    .filter((ref) => {
      const [kind, name] = ref.replace('#/components/', '').split('/');
      return !document.components?.[kind!]?.[name!];
    });
}
