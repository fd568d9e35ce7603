/**
 * Tool schemas every client can read. zod writes a nullable value without constraints
 * as `{"type": ["string", "null"]}`: legal JSON Schema, but a client that maps tool
 * schemas onto a one-`type` dialect (the OpenAPI subset behind some model providers'
 * function declarations) rejects the tool or drops the constraint, and MCP Inspector
 * flags each one as a "schema portability" warning. The same schema written with one
 * `type` per branch, `{"anyOf": [{"type": "string"}, {"type": "null"}]}`, accepts
 * exactly the same values and reads everywhere.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (value: Json): value is { [key: string]: Json } =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The schema with every array-valued `type` split into `anyOf` branches of one type
 * each, at any depth. The node's other keywords stay beside the `anyOf` (a keyword for
 * one type ignores values of another, so where it sits changes nothing); a node that
 * has an `anyOf` already gets the new one as one more `allOf` entry. Property names are
 * never touched (a property may be called `type`).
 */
export function portableSchema<T>(schema: T): T {
  return rewrite(schema as Json, false) as T;
}

/** `inProperties`: `node` maps property names to schemas (`properties` and the like). */
function rewrite(node: Json, inProperties: boolean): Json {
  if (Array.isArray(node)) return node.map((n) => rewrite(n, false));
  if (!isObject(node)) return node;
  const out: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] = inProperties
      ? rewrite(value, false)
      : rewrite(value, NAMED_SCHEMAS.has(key) && isObject(value));
  }
  if (inProperties) return out;
  const { type, ...rest } = out;
  if (!Array.isArray(type) || type.length === 0) return out;
  if (type.length === 1) return { ...rest, type: type[0] ?? null };
  const oneTypeEach = { anyOf: type.map((t) => ({ type: t })) };
  if (rest['anyOf'] === undefined) return { ...rest, ...oneTypeEach };
  const allOf = Array.isArray(rest['allOf']) ? rest['allOf'] : [];
  return { ...rest, allOf: [...allOf, oneTypeEach] };
}

/** Keywords whose value maps names to schemas, not a schema itself. */
const NAMED_SCHEMAS: ReadonlySet<string> = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
]);
