/**
 * The Matrix homeserver goes down under the whole broker (real MatrixGateway, fake
 * homeserver, MCP over HTTP): no new grants while it is down (request_access answers
 * `error` and stores nothing), existing grants keep working on both surfaces, the bot
 * reconnects by itself when the homeserver is back, and later decisions work.
 *
 * (test/approval/matrix-lifecycle.test.ts covers the gateway alone; here the agent's
 * view through the daemon is checked.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool } from '../../support/mcp.js';
import { FAULT_RUN, startMatrixBroker, type MatrixBroker } from '../../support/daemon.js';
import { until } from '../../support/until.js';

let rig: MatrixBroker;
beforeAll(async () => {
  rig = await startMatrixBroker({
    ...FAULT_RUN,
    gatewayOptions: {
      initialSyncLimit: 5,
      pollTimeoutMs: 1_000,
      preparedTimeoutMs: 5_000,
      requestTimeoutMs: 2_000,
      reconnectNudgeMs: 100,
    },
  });
});
afterAll(async () => {
  await rig.close();
});

describe.each(['refuse', '502'] as const)('homeserver outage (%s)', (mode) => {
  it('no new grants while down, existing grants work, the bot reconnects and decides again', async () => {
    await rig.fake.writeFile(`Before-${mode}/a.txt`, 'granted before the outage');
    await rig.fake.writeFile(`After-${mode}/b.txt`, 'granted after the outage');
    const before = await rig.approveByReaction(`Before-${mode}`);
    const agent = await rig.agent();
    const transfer = await rig.transfer();

    await rig.hs.outage(true, mode);
    await until('the gateway notices', () => !rig.gateway.healthy());
    const pendingBefore = rig.store.pendingRequests().length;
    const refused = await callTool(agent, 'request_access', {
      instance: 'personal',
      reason: 'during the outage',
      items: [{ path: `After-${mode}`, mode: 'read' }],
    });
    expect(refused).toMatchObject({ status: 'error', retry: true });
    expect(rig.store.pendingRequests()).toHaveLength(pendingBefore);
    // Existing grants are unaffected by the approval plane.
    expect(
      await callTool(agent, 'list', { instance: 'personal', path: `Before-${mode}` }),
    ).toMatchObject({
      status: 'ok',
    });
    expect(
      await callTool(transfer, 'read', { instance: 'personal', path: `Before-${mode}/a.txt` }),
    ).toMatchObject({
      status: 'ok',
    });
    expect(await callTool(agent, 'check_access', { request: before })).toMatchObject({
      status: 'ok',
    });

    await rig.hs.outage(false);
    await until('the gateway reconnects', () => rig.gateway.healthy());
    const after = await rig.approveByReaction(`After-${mode}`);
    expect(await callTool(agent, 'check_access', { request: after })).toMatchObject({
      status: 'ok',
    });
    expect(
      await callTool(agent, 'list', { instance: 'personal', path: `After-${mode}` }),
    ).toMatchObject({
      status: 'ok',
    });
  });
});
