/**
 * Attack: a push of an unchanged file after a revoke answered "unchanged", exit 0, without
 * asking the broker (issue "Nothing lost, round four", item 7). The agent was told
 * something that was no longer true: that it may still write there. Now the CLI asks the
 * broker (`check_access`, a read-only check it audits as one) before it answers
 * `unchanged`, and a grant revoked or expired since is a refusal, exit 3, as the push
 * itself would be. The real CLI as a subprocess against the daemon and the fake.
 */
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { clientEnv, runCli, tempStage } from '../../../support/processes.js';

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

const puts = (): number =>
  broker.fake.requests.filter((r) => r.method === 'PUT' || r.method === 'MOVE').length;

/** Fetched, edited and pushed once: the local copy is what the CLI last pushed. */
async function pushedOnce(folder: string): Promise<{ stage: string; request: number }> {
  await broker.fake.writeFile(`${folder}/doc.txt`, 'v1');
  const request = await broker.grant([{ path: folder, mode: 'write' }]);
  const stage = tempStage('unchanged');
  const env = clientEnv(broker.url, stage);
  const fetched = await runCli(['fetch', `personal:${folder}/doc.txt`], env);
  expect(fetched.code).toBe(ExitCode.ok);
  writeFileSync(String(fetched.json.local_path), 'v2');
  expect((await runCli(['push', `personal:${folder}/doc.txt`], env)).code).toBe(ExitCode.ok);
  return { stage, request };
}

const checks = (): Record<string, unknown>[] =>
  broker.auditLines().filter((l) => l.tool === 'check_access' && l.surface === 'transfer');

describe('attack: push an unchanged file after the grant ended', () => {
  it('the grant still holds: unchanged, exit 0, nothing sent, the check audited and the grant named', async () => {
    const { stage } = await pushedOnce('Same');
    const before = puts();
    const again = await runCli(['push', 'personal:Same/doc.txt'], clientEnv(broker.url, stage));
    expect(again.code).toBe(ExitCode.ok);
    expect(again.json).toMatchObject({ status: 'unchanged' });
    expect(JSON.stringify(again.json.warnings)).toContain('the write grant still covers');
    expect(puts()).toBe(before);
    expect(checks().map((l) => [l.event, l.check_only, l.path])).toEqual([
      ['intent', true, 'Same/doc.txt'],
      ['outcome', undefined, 'Same/doc.txt'],
    ]);
  });

  it('revoked: refused with grant_revoked, exit 3 (never "unchanged", exit 0)', async () => {
    const { stage, request } = await pushedOnce('Revoked');
    await broker.gateway.decide(`revoke ${request}`);
    const again = await runCli(['push', 'personal:Revoked/doc.txt'], clientEnv(broker.url, stage));
    expect(again.code).toBe(ExitCode.refused);
    expect(again.json).toMatchObject({ status: 'failed', code: 'grant_revoked' });
    expect(checks().at(-1)).toMatchObject({ event: 'refused', code: 'grant_revoked' });
  });

  it('expired: refused with grant_expired, exit 3', async () => {
    const { stage } = await pushedOnce('Expired');
    broker.clock.offset += 25 * 3_600_000;
    try {
      const again = await runCli(
        ['push', 'personal:Expired/doc.txt'],
        clientEnv(broker.url, stage),
      );
      expect(again.code).toBe(ExitCode.refused);
      expect(again.json).toMatchObject({ code: 'grant_expired' });
    } finally {
      broker.clock.offset -= 25 * 3_600_000;
    }
  });
});
