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
import { Ajv2020 } from 'ajv/dist/2020.js';
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

describe("a task's result validates against request_access's declared output schema", () => {
  // Inspector (and any client that checks structuredContent) failed every decided task
  // with "data must NOT have additional properties": the result is check_access's answer,
  // which request_access's schema did not declare.
  const declared = async () => {
    const listed = await rpc('tools/list', {}, { tasks: true });
    const tools = listed.result?.tools as { name: string; outputSchema: object }[];
    const schema = tools.find((t) => t.name === 'request_access')?.outputSchema;
    return new Ajv2020({ strict: true, allErrors: true }).compile(schema ?? false);
  };
  const decidedAs = async (path: string, decision: (n: number) => string) => {
    const created = await requestAccess(path, true);
    const taskId = created.result?.taskId as string;
    const request = Number(/^request-(\d+)$/.exec(taskId)?.[1]);
    await broker.gateway.decide(decision(request));
    const done = await getTask(taskId);
    expect(done.result).toMatchObject({ status: 'completed' });
    return (done.result?.result as { structuredContent: unknown }).structuredContent;
  };

  it.each([
    ['approved', (n: number) => `approve ${n}`],
    ['denied', (n: number) => `deny ${n}`],
  ])('%s', async (state, decision) => {
    const validate = await declared();
    const result = await decidedAs(`Tasks/Schema-${state}`, decision);
    expect(result).toMatchObject({ state });
    expect(validate(result), JSON.stringify(validate.errors)).toBe(true);
  });

  it('partially approved, then revoked: what holds now is declared too', async () => {
    const validate = await declared();
    const created = await rpc(
      'tools/call',
      {
        name: 'request_access',
        arguments: {
          instance: 'personal',
          reason: 'schema',
          items: [
            { path: 'Tasks/Partial-a', mode: 'read' },
            { path: 'Tasks/Partial-b', mode: 'write' },
          ],
        },
      },
      { tasks: true, name: 'request_access' },
    );
    const taskId = created.result?.taskId as string;
    const request = Number(/^request-(\d+)$/.exec(taskId)?.[1]);
    await broker.gateway.decide(`approve ${request} 1`);
    await broker.gateway.decide(`revoke ${request}`);
    const done = await getTask(taskId);
    const result = (done.result?.result as { structuredContent: unknown }).structuredContent;
    expect(result).toMatchObject({
      state: 'partially_approved',
      items: [{ grant_state: 'revoked', ended_by: 'owner' }, { granted: false }],
    });
    expect(validate(result), JSON.stringify(validate.errors)).toBe(true);
  });

  it('the pending answer without tasks is the same shape: the request as check_access shows it', async () => {
    const validate = await declared();
    const plain = await requestAccess('Tasks/Schema-plain', false);
    const answer = plain.result?.structuredContent as { request: number };
    expect(validate(answer), JSON.stringify(validate.errors)).toBe(true);
    const checked = await rpc(
      'tools/call',
      { name: 'check_access', arguments: { request: answer.request } },
      { tasks: false, name: 'check_access' },
    );
    const { message: _m, hint: _h, ...fields } = answer as Record<string, unknown>;
    const { message: _c, ...checkedFields } = checked.result?.structuredContent as Record<
      string,
      unknown
    >;
    expect(fields).toEqual(checkedFields);
    expect(fields).toMatchObject({
      status: 'pending',
      state: 'pending',
      instance: 'personal',
      items: [{ n: 1, path: 'Tasks/Schema-plain', granted: false, holds: 'waiting for the owner' }],
    });
  });
});
