/**
 * The broker follows the server's capabilities: with files_lock disabled (`occ
 * app:disable files_lock`) checkout is refused without touching the file and the doctor
 * says how to fix it; with files_trashbin disabled trash is refused, since a delete
 * would be permanent. Both apps are enabled again after each test.
 */
import type { SwitchableApp } from './server.js';
import { seriesOf } from './series.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { useRealRig } from './rig.js';
import { call } from '../../support/mcp.js';

const rig = useRealRig();

/** Runs `fn` with an app disabled on the server, and enables it again whatever happens. */
async function withAppDisabled(app: SwitchableApp, fn: () => Promise<void>): Promise<void> {
  await rig.server.setApp(app, false);
  try {
    await fn();
  } finally {
    await rig.server.setApp(app, true);
  }
}

/** A configuration for `broker doctor` with the broker's instance on the real server. */
function doctorConfig(): string {
  const dir = mkdtempSync(join(tmpdir(), 'broker-real-doctor-'));
  const file = join(dir, 'config.yaml');
  const { tokens } = rig.broker.config;
  writeFileSync(
    file,
    [
      `tokens: { agent: "${tokens.agent}", transfer: "${tokens.transfer}" }`,
      'approval: console',
      `data_dir: ${join(dir, 'data')}`,
      'instances:',
      `  personal: { url: "${rig.server.url}", username: "${rig.server.owner.user}", app_password: "${rig.server.owner.password}" }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return file;
}

async function doctor(): Promise<{ code: number; text: string }> {
  const run = await rig.cli(['doctor', '--config', doctorConfig()], rig.stage());
  expect(run.stdout).not.toContain(rig.server.owner.password);
  return { code: run.code, text: run.stdout };
}

describe('capabilities', () => {
  it('with both apps on, the doctor passes every check against the real server', async () => {
    const { code, text } = await doctor();
    expect(text).toMatch(
      new RegExp(`✓ .*reachable \\(Nextcloud ${await seriesOf(rig.server.url)}\\.`),
    );
    expect(text).toMatch(/✓ credentials accepted/);
    expect(text).toMatch(/✓ trash bin on/);
    expect(text).toMatch(/✓ file locking on/);
    expect(code, text).toBe(ExitCode.ok);
  });

  it('files_lock off: checkout is refused, nothing is locked or created; on again it works', async () => {
    await rig.owner.writeFile('NoLock/doc.txt', 'v1');
    await rig.broker.grant([{ path: 'NoLock', mode: 'write' }]);
    await withAppDisabled('files_lock', async () => {
      const answer = await call(rig.transfer, 'checkout', {
        instance: 'personal',
        path: 'NoLock/doc.txt',
      });
      expect(answer).toMatchObject({ status: 'refused', code: 'locking_unavailable' });
      expect(answer.message).toMatch(/files_lock/);
      expect(await rig.owner.list('NoLock')).toEqual(['doc.txt']);
      const { code, text } = await doctor();
      expect(text).toMatch(/✗ file locking off/);
      expect(text).toMatch(/files_lock/);
      expect(code).toBe(2);
    });
    const again = await call(rig.transfer, 'checkout', {
      instance: 'personal',
      path: 'NoLock/doc.txt',
    });
    expect(again.status).toBe('ok');
    expect(await rig.owner.locked('NoLock/doc.txt')).toBe(true);
  });

  it('files_trashbin off: trash is refused and the file stays; on again it goes to the bin', async () => {
    await rig.owner.writeFile('NoTrash/doc.txt', 'keep');
    await rig.broker.grant([{ path: 'NoTrash', mode: 'write' }]);
    await withAppDisabled('files_trashbin', async () => {
      const answer = await call(rig.agent, 'trash', {
        instance: 'personal',
        path: 'NoTrash/doc.txt',
      });
      expect(answer).toMatchObject({ status: 'refused', code: 'trash_unavailable' });
      expect(await rig.owner.read('NoTrash/doc.txt')).toBe('keep');
      const { code, text } = await doctor();
      expect(text).toMatch(/✗ trash bin off/);
      expect(code).toBe(2);
    });
    const trashed = await call(rig.agent, 'trash', {
      instance: 'personal',
      path: 'NoTrash/doc.txt',
    });
    expect(trashed).toMatchObject({ status: 'ok' });
    expect((await rig.owner.trash()).map((t) => t.original)).toContain(trashed['trashed_as']);
  });
});
