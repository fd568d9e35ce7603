/**
 * Both MCP revisions on the same endpoint: a client speaking only 2026-07-28 (the v2
 * SDK's Client pinned to it: `server/discover`, the envelope in every `_meta`, no
 * session) lists and calls the agent tools, and a 2025-11-25 client (the v1 SDK's,
 * `initialize`) keeps working beside it.
 */
import {
  Client as ModernClient,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODERN_CLAIM } from '../../broker/surfaces/mcp-endpoint.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { AGENT_TOKEN } from '../../support/tokens.js';

let broker: Broker;

beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

async function modernClient(
  mode: 'auto' | { pin: string } = { pin: '2026-07-28' },
): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'modern-agent', version: '1.0.0' },
    { versionNegotiation: { mode } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${broker.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${AGENT_TOKEN}` } },
    }),
  );
  return client;
}

describe('MCP 2026-07-28 beside 2025-11-25', () => {
  it('the endpoint spells the envelope claim as the SDK does', () => {
    expect(MODERN_CLAIM).toBe(PROTOCOL_VERSION_META_KEY);
  });

  it('a 2026-07-28 client lists and calls the agent tools', async () => {
    const client = await modernClient();
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['request_access', 'check_access', 'list']),
    );
    const result = await client.callTool({ name: 'check_access', arguments: {} });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({ status: 'ok', grants: [] });
    const refused = await client.callTool({ name: 'list', arguments: { instance: 'nope' } });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ status: 'refused' });
    await client.close();
  });

  it('a negotiating client (`auto`: server/discover first) settles on 2026-07-28', async () => {
    const client = await modernClient('auto');
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const result = await client.callTool({ name: 'list_instances', arguments: {} });
    expect(result.structuredContent).toMatchObject({ status: 'ok' });
    await client.close();
  });

  it("both revisions' instructions put the CLI on the agent's host, not the owner's", async () => {
    const modern = await modernClient();
    const legacy = await broker.agent();
    for (const text of [modern.getInstructions(), legacy.getInstructions()]) {
      expect(text).toContain("the `broker` CLI on your (the agent's) host");
      expect(text).not.toContain("owner's `broker`");
    }
    await modern.close();
  });

  it('a 2025-11-25 client on the same endpoint still initializes and calls', async () => {
    const agent = await broker.agent();
    expect(await call(agent, 'check_access')).toMatchObject({ status: 'ok' });
  });
});
