/**
 * Every tool schema a client reads names one `type` per schema: MCP Inspector warned
 * about 21 `type: ["string","null"]` (zod's form of a plain nullable value), which a
 * client mapping schemas onto a one-`type` dialect rejects or reads wrongly. Checked on
 * what both surfaces list over HTTP and what `broker mcp` lists; and the rewrite
 * (portable-schema.ts) is shown to accept exactly what the original accepts.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portableSchema } from '../../broker/surfaces/portable-schema.js';
import { TRANSFER_TOOLS, toolListing } from '../../cli/client/mcp/tools.js';
import { startBroker, type Broker } from '../../support/daemon.js';

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

/** Where a schema has an array-valued `type`, as JSON paths (property names excluded). */
function typeArrays(node: unknown, path = '$'): string[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => typeArrays(n, `${path}[${i}]`));
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) => {
    const here = `${path}.${key}`;
    if (key === 'properties' && typeof value === 'object' && value !== null) {
      return Object.entries(value).flatMap(([name, s]) => typeArrays(s, `${here}.${name}`));
    }
    return [...(key === 'type' && Array.isArray(value) ? [here] : []), ...typeArrays(value, here)];
  });
}

describe('no tool schema has an array-valued type', () => {
  it('on the agent and transfer surfaces, input and output', async () => {
    let nullables = 0;
    for (const open of [() => broker.agent(), () => broker.transfer()]) {
      const { tools } = await (await open()).listTools();
      for (const tool of tools) {
        expect(typeArrays(tool.inputSchema), `${tool.name} input`).toEqual([]);
        expect(typeArrays(tool.outputSchema), `${tool.name} output`).toEqual([]);
        nullables += JSON.stringify(tool.outputSchema).split('{"type":"null"}').length - 1;
      }
    }
    // The nullable fields are still nullable, written as anyOf (list, search, the
    // calendar and contacts tools, the transfer answers' etag and size).
    expect(nullables).toBeGreaterThanOrEqual(21);
  });

  it('in what `broker mcp` lists', () => {
    for (const tool of TRANSFER_TOOLS) {
      const listing = toolListing(tool);
      expect(typeArrays(listing), tool.transfer.name).toEqual([]);
    }
  });

  it('keeps `list` entries nullable where they were', async () => {
    const { tools } = await (await broker.agent()).listTools();
    const list = tools.find((t) => t.name === 'list');
    const entry = (list?.outputSchema?.properties?.['entries'] as { items: { properties: object } })
      .items.properties;
    expect(entry).toMatchObject({
      size: { anyOf: [{ type: 'number' }, { type: 'null' }] },
      modified: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    });
  });
});

describe('portableSchema', () => {
  const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'] as const;
  const types = fc.uniqueArray(fc.constantFrom(...TYPES), { minLength: 1, maxLength: 4 });
  const keywords = {
    type: fc.oneof(fc.constantFrom(...TYPES), types),
    maxLength: fc.nat(4),
    minimum: fc.integer({ min: -3, max: 3 }),
  };
  const leaf = fc.record(keywords, { requiredKeys: [] });
  const { schema } = fc.letrec((tie) => ({
    schema: fc.oneof({ maxDepth: 3, depthSize: 'small' }, leaf, tie('node')),
    node: fc.record(
      {
        ...keywords,
        properties: fc.dictionary(fc.constantFrom('a', 'type', 'anyOf'), tie('schema'), {
          maxKeys: 2,
        }),
        items: tie('schema'),
        anyOf: fc.array(tie('schema'), { minLength: 1, maxLength: 2 }),
      },
      { requiredKeys: [] },
    ),
  }));

  it('accepts exactly the values the original accepts', () => {
    const ajv = new Ajv2020({ strict: false });
    fc.assert(
      fc.property(
        schema,
        fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 8 }),
        (generated, values) => {
          const s = generated as Record<string, unknown>;
          const rewritten = portableSchema(s);
          expect(typeArrays(rewritten)).toEqual([]);
          const before = ajv.compile(s);
          const after = ajv.compile(rewritten);
          for (const v of values) expect(after(v), JSON.stringify(v)).toBe(before(v));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('leaves a property named "type" and a schema without a type array as they are', () => {
    const s = {
      type: 'object',
      properties: { type: { type: 'string' }, kind: { enum: ['a', 'b'] } },
      required: ['type'],
    };
    expect(portableSchema(s)).toEqual(s);
  });

  it('joins a type array with an anyOf already there through allOf', () => {
    expect(portableSchema({ type: ['string', 'null'], anyOf: [{ maxLength: 2 }] })).toEqual({
      anyOf: [{ maxLength: 2 }],
      allOf: [{ anyOf: [{ type: 'string' }, { type: 'null' }] }],
    });
  });
});
