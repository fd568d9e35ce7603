/**
 * A pending request_access as an MCP task (2026-07-28, Tasks extension): a client that
 * declares `io.modelcontextprotocol/tasks` in its request's capabilities gets a task that
 * is `working` until the owner decides and `completed` (with the check_access answer)
 * once the owner approves or the request expires. A client that does not declare it
 * keeps today's `pending` answer, and may not read tasks.
 *
 * Raw JSON-RPC over HTTP: the v2 SDK's Client has no runtime for the extension; the
 * envelope keys are the SDK's own constants.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASKS_EXTENSION } from '../../broker/surfaces/mcp-tasks.js';
import { H, startBroker, type Broker } from '../../support/daemon.js';
import { AGENT_TOKEN } from '../../support/tokens.js';

let broker: Broker;
let nextId = 1;

beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

interface Answer {
  status: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** One 2026-07-28 request: the envelope in `_meta`, the standard headers. */
async function rpc(
  method: string,
  params: Record<string, unknown>,
  opts: { tasks: boolean; name?: string },
): Promise<Answer> {
  const meta = {
    [PROTOCOL_VERSION_META_KEY]: '2026-07-28',
    [CLIENT_INFO_META_KEY]: { name: 'task-agent', version: '1.0.0' },
    [CLIENT_CAPABILITIES_META_KEY]: opts.tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
  };
  const response = await fetch(`${broker.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${AGENT_TOKEN}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(opts.name === undefined ? {} : { 'mcp-name': opts.name }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method,
      params: { ...params, _meta: meta },
    }),
  });
  const body = (await response.json()) as Omit<Answer, 'status'>;
  return { status: response.status, ...body };
}

const requestAccess = (path: string, tasks: boolean) =>
  rpc(
    'tools/call',
    {
      name: 'request_access',
      arguments: { instance: 'personal', reason: 'task test', items: [{ path, mode: 'read' }] },
    },
    { tasks, name: 'request_access' },
  );

const getTask = (taskId: string, tasks = true) =>
  rpc('tasks/get', { taskId }, { tasks, name: taskId });

describe('a pending request as a task', () => {
  it('is working until the owner approves, then completed with the check_access answer', async () => {
    const created = await requestAccess('Tasks/Approved', true);
    expect(created.status).toBe(200);
    const task = created.result as Record<string, unknown>;
    expect(task).toMatchObject({
      resultType: 'task',
      status: 'working',
      ttlMs: expect.any(Number) as number,
      pollIntervalMs: expect.any(Number) as number,
    });
    expect(task).not.toHaveProperty('result');
    expect(task).not.toHaveProperty('task');
    const taskId = task.taskId as string;
    const request = Number(/^request-(\d+)$/.exec(taskId)?.[1]);
    expect(broker.store.getRequest(request)?.state).toBe('pending');

    const waiting = await getTask(taskId);
    expect(waiting.result).toMatchObject({
      resultType: 'complete',
      taskId,
      status: 'working',
      statusMessage: `request #${request} is waiting for the owner's decision`,
    });
    expect(waiting.result).not.toHaveProperty('result');

    await broker.gateway.decide(`approve ${request}`);
    const done = await getTask(taskId);
    expect(done.result).toMatchObject({ resultType: 'complete', taskId, status: 'completed' });
    const result = done.result?.result as { isError: boolean; structuredContent: unknown };
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({ status: 'ok', request, state: 'approved' });
  });

  it('completes as expired when the owner never decides (clock past the request life)', async () => {
    const created = await requestAccess('Tasks/Expired', true);
    const taskId = created.result?.taskId as string;
    broker.clock.offset += 13 * H;
    try {
      await broker.server.sweep();
      const done = await getTask(taskId);
      expect(done.result).toMatchObject({ status: 'completed' });
      const result = done.result?.result as { structuredContent: unknown };
      expect(result.structuredContent).toMatchObject({ state: 'expired' });
    } finally {
      broker.clock.offset -= 13 * H;
    }
  });

  it('a client that does not ask keeps the pending answer and may not read tasks', async () => {
    const plain = await requestAccess('Tasks/Plain', false);
    expect(plain.result).toMatchObject({
      resultType: 'complete',
      isError: false,
      structuredContent: { status: 'pending' },
    });
    const request = (plain.result?.structuredContent as { request: number }).request;
    const refused = await getTask(`request-${request}`, false);
    expect(refused.status).toBe(400);
    expect(refused.error?.code).toBe(-32021);
  });

  it('tasks/cancel is not served: the agent cannot withdraw a request', async () => {
    const created = await requestAccess('Tasks/Cancel', true);
    const taskId = created.result?.taskId as string;
    const cancel = await rpc('tasks/cancel', { taskId }, { tasks: true, name: taskId });
    expect(cancel.error?.code).toBe(-32601);
    expect((await getTask(taskId)).result).toMatchObject({ status: 'working' });
  });

  it('an id that names no request is unknown (-32602)', async () => {
    for (const taskId of ['request-999999', 'nonsense', 'request-01']) {
      const answer = await getTask(taskId);
      expect(answer.error?.code).toBe(-32602);
    }
  });
});
