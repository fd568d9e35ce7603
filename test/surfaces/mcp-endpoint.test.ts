/**
 * The one place results leave an MCP surface: a handler that throws or answers outside
 * its output schema becomes a generic error with a correlation id (details only in the
 * scrubbed log), and invalid arguments never reach a handler.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { memoryLogger } from '../../broker/base/log.js';
import { createScrubber, createSecretGuard } from '../../broker/base/scrub.js';
import { ok, type Envelope } from '../../broker/base/envelope.js';
import { createMcpSurface } from '../../broker/surfaces/mcp-endpoint.js';
import { ToolRegistry } from '../../broker/surfaces/tool.js';
import { call, connectMcp } from '../../support/mcp.js';
import { envelopeSchema } from '../../broker/surfaces/schemas.js';

const SECRET = 'a-secret-value-that-must-not-leak-0123456789';
const logger = memoryLogger(createScrubber([SECRET]));
const invalid: string[] = [];
const secretFields: string[] = [];
let handled = 0;
let server: ReturnType<ReturnType<typeof express>['listen']>;
let client: Client;

const annotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};

beforeAll(async () => {
  const registry = new ToolRegistry();
  registry.add({
    name: 'boom',
    title: 'boom',
    description: 'throws',
    input: z.strictObject({}),
    output: envelopeSchema({}),
    annotations,
    handler: () => Promise.reject(new Error(`internal detail ${SECRET}`)),
  });
  registry.add({
    name: 'leaky',
    title: 'leaky',
    description: 'answers a field its schema does not declare',
    input: z.strictObject({}),
    output: envelopeSchema({}),
    annotations,
    handler: () => Promise.resolve({ ...ok('fine'), password: SECRET } as Envelope),
  });
  registry.add({
    name: 'echo',
    title: 'echo',
    description: 'echoes n',
    input: z.strictObject({ n: z.number().int() }),
    output: envelopeSchema({ n: z.number().optional(), text: z.string().optional() }),
    annotations,
    handler: (args) => {
      handled += 1;
      return Promise.resolve(ok('echo', { n: args.n, text: `planted ${SECRET}` }));
    },
  });
  expect(() =>
    registry.add({
      name: 'echo',
      title: 'dup',
      description: '',
      input: z.strictObject({}),
      output: envelopeSchema({}),
      annotations,
      handler: () => Promise.resolve(ok('x')),
    }),
  ).toThrow(/twice/);
  let n = 0;
  const surface = createMcpSurface(
    'agent',
    registry,
    {
      logger,
      scrub: createScrubber([SECRET]),
      holdsSecret: createSecretGuard([SECRET]).holds,
      correlationId: () => `cid-${++n}`,
      onInvalidArguments: async (_ctx, message, envelope) => {
        invalid.push(message);
        return envelope;
      },
      onSecretInArguments: async (_ctx, field, envelope) => {
        secretFields.push(field);
        return envelope;
      },
    },
    'test',
  );
  const app = express();
  app.use(express.json());
  app.post('/mcp', (req, res) => void surface.handle(req, res, req.body));
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  client = await connectMcp(
    `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    'unused',
  );
});

afterAll(async () => {
  await client.close();
  await new Promise((r) => server.close(r));
});

describe('the error boundary', () => {
  it('a thrown error becomes a generic internal error; the detail is logged, scrubbed', async () => {
    const answer = await call(client, 'boom');
    expect(answer).toMatchObject({ status: 'error', code: 'internal', retry: true });
    expect(answer.message).not.toContain('internal detail');
    const line = logger.lines.find((l) => l.includes('internal detail'));
    expect(line).toContain(answer.correlation_id as string);
    expect(logger.lines.join('')).not.toContain(SECRET);
  });

  it('a result outside the output schema never leaves', async () => {
    const result = await client.callTool({ name: 'leaky', arguments: {} });
    expect(JSON.stringify(result)).not.toContain(SECRET);
    expect(result.structuredContent).toMatchObject({ status: 'error', code: 'internal' });
  });

  it('invalid arguments are refused before the handler runs', async () => {
    const before = handled;
    expect(await call(client, 'echo', { n: 'one' })).toMatchObject({
      status: 'refused',
      code: 'invalid_arguments',
    });
    expect(await call(client, 'echo', { n: 1, extra: true })).toMatchObject({
      status: 'refused',
      code: 'invalid_arguments',
    });
    expect(handled).toBe(before);
    expect(invalid.length).toBe(2);
  });

  it('an argument holding a secret is refused before parsing, naming the field, never the value', async () => {
    const before = handled;
    const b64 = Buffer.from(SECRET).toString('base64');
    for (const [args, field] of [
      [{ n: 1, extra: `x${SECRET}y` }, 'extra'],
      [{ n: `${b64}` }, 'n'],
      [{ n: 1, deep: [{}, { a: ['', encodeURIComponent(SECRET)] }] }, 'deep[1].a[1]'],
      [{ n: 1, [SECRET]: 1 }, 'a key of the arguments'],
    ] as const) {
      const result = await client.callTool({ name: 'echo', arguments: args });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({
        status: 'refused',
        code: 'secret_in_arguments',
        field,
      });
      expect(JSON.stringify(result)).not.toContain(SECRET);
      expect(JSON.stringify(result)).not.toContain(b64);
      expect(secretFields.at(-1)).toBe(field);
    }
    expect(handled).toBe(before);
  });

  it('every string of a result is scrubbed of configured secrets', async () => {
    const answer = await call(client, 'echo', { n: 1 });
    expect(answer).toMatchObject({ status: 'ok', n: 1 });
    expect(answer.text).not.toContain(SECRET);
  });
});
