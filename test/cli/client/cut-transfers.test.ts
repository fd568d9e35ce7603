/**
 * A transfer cut because its grant ended is a refusal (exit 3, with the code), never
 * "retry later" (exit 2); exit 2 is for a dropped connection or a failing server. The
 * real `broker` CLI as a subprocess against the daemon, whose Nextcloud (the fake) sits
 * behind a gate that stalls the bytes half-way, so the revoke lands while they move.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../../fakes/nextcloud.js';
import { startBrokerOn, type BrokerOn } from '../../../support/daemon.js';
import { startGateProxy, whileHeld, type GateProxy } from '../../../support/gate-proxy.js';
import { clientEnv, runCli, tempStage } from '../../../support/processes.js';
import { APP_PASSWORD } from '../../../support/tokens.js';

const MiB = 1024 * 1024;
/** Large enough that the stream is still moving when the gate holds it. */
const SIZE = 48 * MiB;
let fake: FakeNextcloud;
let gate: GateProxy;
let broker: BrokerOn;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
  gate = await startGateProxy(fake.url);
  broker = await startBrokerOn({ url: gate.url, user: fake.user, password: APP_PASSWORD });
});
afterAll(async () => {
  await broker.close();
  await gate.close();
  await fake.close();
});

const stageDir = (): string => tempStage('cut');
const envFor = (stage: string): Record<string, string> => clientEnv(broker.url, stage);

/** The last audited outcome of a blob transfer. */
const lastBlobOutcome = (tool: 'blob_get' | 'blob_put') =>
  broker
    .auditLines()
    .filter((l) => l.tool === tool && l.event === 'outcome')
    .at(-1);

describe('a revoke during a large fetch', () => {
  it('exits 3 with the code the broker audited, and leaves nothing behind', async () => {
    await fake.writeFile('CutFetch/large.bin', randomBytes(SIZE));
    const id = await broker.grant([{ path: 'CutFetch', mode: 'read' }]);
    const stage = stageDir();
    const result = await whileHeld(
      gate,
      'down',
      2 * MiB,
      () => runCli(['fetch', 'personal:CutFetch/large.bin'], envFor(stage)),
      () => broker.gateway.decide(`revoke ${id}`),
    );
    expect(result.code).toBe(ExitCode.refused);
    const audited = lastBlobOutcome('blob_get');
    expect(audited).toMatchObject({ outcome: 'refused' });
    expect(result.json).toMatchObject({ status: 'failed', code: audited?.code });
    expect(String(result.json.next_step)).toMatch(/request.access/);
    expect(readdirSync(stage)).toEqual([]);
    expect(existsSync(`${stage}.state`)).toBe(false);
  });
});

describe('a revoke during a large push', () => {
  it('exits 3 with the code the broker audited, and nothing is stored', async () => {
    await fake.mkdir('CutPush');
    const id = await broker.grant([{ path: 'CutPush', mode: 'write' }]);
    const stage = stageDir();
    const src = join(stage, 'up.bin');
    writeFileSync(src, randomBytes(SIZE));
    const result = await whileHeld(
      gate,
      'up',
      2 * MiB,
      () => runCli(['push', 'personal:CutPush/up.bin', src], envFor(stage)),
      () => broker.gateway.decide(`revoke ${id}`),
    );
    expect(result.code).toBe(ExitCode.refused);
    const audited = lastBlobOutcome('blob_put');
    expect(audited).toMatchObject({ outcome: 'refused' });
    expect(result.json).toMatchObject({ status: 'failed', code: audited?.code });
    expect(await fake.exists('CutPush/up.bin')).toBe(false);
    expect(readdirSync(stage)).toEqual(['up.bin']);
    expect(existsSync(`${stage}.state`)).toBe(false);
  });
});

describe('Nextcloud going away during a large fetch', () => {
  it('is exit 2 (retry later), with the code the broker gave, and leaves nothing behind', async () => {
    await fake.writeFile('Drop/large.bin', randomBytes(SIZE));
    await broker.grant([{ path: 'Drop', mode: 'read' }]);
    const stage = stageDir();
    const result = await whileHeld(
      gate,
      'down',
      2 * MiB,
      () => runCli(['fetch', 'personal:Drop/large.bin'], envFor(stage)),
      () => Promise.resolve(gate.cut()),
    );
    expect(result.code).toBe(ExitCode.infrastructure);
    expect(result.json.status).toBe('failed');
    expect(typeof result.json.code).toBe('string');
    expect(String(result.json.next_step)).toMatch(/retry|try again/);
    expect(readdirSync(stage)).toEqual([]);
  });
});
