/**
 * MCP clients for the tests, the benchmarks, the soak and the review: the SDK's real
 * Client over Streamable HTTP with a bearer header, and helpers that read a tool's
 * envelope.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** A tool's answer as a client reads it off the wire (any status a server may send). */
export type Envelope = {
  status: string;
  message?: string;
  code?: string;
  retry?: boolean;
} & Record<string, unknown>;

export async function connectMcp(
  url: string,
  token: string,
  name = 'bench-agent',
): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    // The SDK hands the transport's one AbortSignal to every fetch, and undici drops its
    // abort listener only when the request is garbage collected: a long-lived client
    // piles up listeners (MaxListenersExceededWarning after 1,500 calls, each warning
    // printed at a cost). A per-call signal that follows the transport's aborts alike.
    fetch: (input, init) =>
      fetch(input, init?.signal ? { ...init, signal: AbortSignal.any([init.signal]) } : init),
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool; returns its envelope (structuredContent, else the JSON text). */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Envelope> {
  const result = await client.callTool({ name, arguments: args });
  if (result.structuredContent !== undefined) return result.structuredContent as Envelope;
  const first = (result.content as { type: string; text?: string }[] | undefined)?.[0];
  return JSON.parse(first?.text ?? '{}') as Envelope;
}

/** Calls a tool and returns its envelope, checking text and structuredContent agree. */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Envelope> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text: string }[];
  const first = content[0];
  if (first === undefined || first.type !== 'text') throw new Error('no text content');
  const fromText = JSON.parse(first.text) as Envelope;
  const structured = result.structuredContent as Envelope;
  if (JSON.stringify(fromText) !== JSON.stringify(structured)) {
    throw new Error(`text and structuredContent differ: ${first.text}`);
  }
  return structured;
}

/**
 * Asks for access and approves it on the subprocess broker's console; resolves with
 * the request number once the grant is active.
 */
export async function grantViaConsole(
  agent: Client,
  approve: (line: string) => void,
  instance: string,
  items: { path: string; mode: 'read' | 'write' }[],
  timeoutMs = 10_000,
): Promise<number> {
  const answer = await callTool(agent, 'request_access', { instance, reason: 'benchmark', items });
  if (answer.status !== 'pending')
    throw new Error(`request not pending: ${JSON.stringify(answer)}`);
  const id = answer.request as number;
  approve(`approve ${id}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await callTool(agent, 'check_access', { request: id });
    if (state.status === 'ok') return id;
    if (state.status !== 'pending' || Date.now() > deadline)
      throw new Error(`request ${id} not approved: ${JSON.stringify(state)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
