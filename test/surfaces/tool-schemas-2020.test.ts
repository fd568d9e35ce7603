/**
 * Every tool schema both surfaces list (over either MCP revision) is valid JSON Schema
 * draft 2020-12, the dialect MCP 2025-11-25 and 2026-07-28 assume for a schema without
 * `$schema`: Ajv's 2020-12 validator compiles each one in strict mode (unknown keywords
 * and draft-07 forms such as array-valued `items` fail), and a tool's schema accepts the
 * arguments the tests call it with.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from '../../support/daemon.js';

let broker: Broker;

beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

describe('tool schemas are JSON Schema 2020-12', () => {
  it('compiles every input and output schema of both surfaces with Ajv 2020', async () => {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    for (const open of [() => broker.agent(), () => broker.transfer()]) {
      const client = await open();
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThan(3);
      for (const tool of tools) {
        expect(tool.inputSchema).not.toHaveProperty('$schema');
        expect(() => ajv.compile(tool.inputSchema), `${tool.name} input`).not.toThrow();
        expect(() => ajv.compile(tool.outputSchema ?? {}), `${tool.name} output`).not.toThrow();
      }
    }
    const agent = await broker.agent();
    const { tools } = await agent.listTools();
    const requestAccess = tools.find((t) => t.name === 'request_access');
    const validate = ajv.compile(requestAccess?.inputSchema ?? false);
    const args = { instance: 'personal', reason: 'r', items: [{ path: 'A', mode: 'read' }] };
    expect(validate(args)).toBe(true);
    expect(validate({ ...args, items: [] })).toBe(false);
  });
});
