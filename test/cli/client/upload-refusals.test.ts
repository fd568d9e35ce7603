/**
 * Attack: Nextcloud refuses an upload while its body is still coming (issue 24, item 5).
 * The owner's quota is full (507 on the first chunk, or on a create-only PUT before its
 * body), or someone else holds a lock on the file (423 on the commit). The broker must
 * answer at once with Nextcloud's cause, and the CLI exit with a refusal: 3, or 5 for a
 * lock (someone else holds the file, so nothing was clobbered), never 2 ("retry later").
 * The audit records the same cause. The real `broker` CLI as a subprocess against the
 * daemon and the fake Nextcloud, whose quota answers as Nextcloud 34 does.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { clientEnv, runCli, tempStage } from '../../../support/processes.js';

const MiB = 1024 * 1024;
/** The broker drops a blob stream idle this long; an answer "at once" comes well before. */
const IDLE_MS = 20_000;
let broker: Broker;

beforeAll(async () => {
  broker = await startBroker({ chunkSize: 5 * MiB, putLimit: 5 * MiB, requestTimeoutMs: IDLE_MS });
});
afterAll(async () => {
  await broker.close();
});
beforeEach(() => {
  broker.fake.reset();
});

/** The last audited outcome of a blob upload. */
const lastUploadOutcome = () =>
  broker
    .auditLines()
    .filter((l) => l.tool === 'blob_put' && l.event === 'outcome')
    .at(-1);

/** Pushes `size` fresh bytes to `folder/name`; the CLI's result and how long it took. */
async function push(folder: string, name: string, size: number) {
  await broker.fake.mkdir(folder);
  await broker.grant([{ path: folder, mode: 'write' }]);
  const stage = tempStage('refusal');
  const src = join(stage, name);
  writeFileSync(src, randomBytes(size));
  const started = performance.now();
  const result = await runCli(
    ['push', `personal:${folder}/${name}`, src],
    clientEnv(broker.url, stage),
  );
  return { result, ms: performance.now() - started };
}

describe('attack: Nextcloud refuses an upload mid-body', () => {
  it('507 on the first chunk (quota full): exit 3 at once, the cause audited', async () => {
    broker.fake.faults.quotaBytes = MiB;
    const { result, ms } = await push('Full', 'big.bin', 12 * MiB);
    expect(result.code).toBe(ExitCode.refused);
    expect(result.json).toMatchObject({ status: 'failed', code: 'insufficient_storage' });
    expect(String(result.json.error)).toContain('507 Insufficient Storage');
    expect(ms).toBeLessThan(IDLE_MS);
    expect(lastUploadOutcome()).toMatchObject({
      outcome: 'refused',
      code: 'insufficient_storage',
    });
    expect(await broker.fake.exists('Full/big.bin')).toBe(false);
    expect(broker.fake.uploadFolders()).toEqual([]);
  }, 60_000);

  it('507 on a create-only PUT, before its body: exit 3 at once, the cause audited', async () => {
    broker.fake.faults.quotaBytes = MiB;
    const { result, ms } = await push('FullSmall', 'small.bin', 3 * MiB);
    expect(result.code).toBe(ExitCode.refused);
    expect(result.json).toMatchObject({ status: 'failed', code: 'insufficient_storage' });
    expect(ms).toBeLessThan(IDLE_MS);
    expect(lastUploadOutcome()).toMatchObject({
      outcome: 'refused',
      code: 'insufficient_storage',
    });
    expect(await broker.fake.exists('FullSmall/small.bin')).toBe(false);
  }, 60_000);

  it('423 on the commit (someone else holds a lock): exit 5, the cause audited', async () => {
    await broker.fake.writeFile('Held/doc.bin', randomBytes(1000));
    await broker.grant([{ path: 'Held', mode: 'write' }]);
    // Locked before the fetch: the etag the CLI holds is current, only the lock is in the way.
    await broker.fake.lockAs('Held/doc.bin', { type: 'token', owner: 'bob' });
    const stage = tempStage('refusal');
    const env = clientEnv(broker.url, stage);
    const fetched = await runCli(['fetch', 'personal:Held/doc.bin'], env);
    expect(fetched.code).toBe(ExitCode.ok);
    const local = String(fetched.json.local_path);
    writeFileSync(local, randomBytes(6 * MiB));
    const started = performance.now();
    const result = await runCli(['push', 'personal:Held/doc.bin', local], env);
    expect(result.code).toBe(ExitCode.clobber);
    expect(result.json).toMatchObject({ status: 'failed', code: 'locked' });
    expect(String(result.json.error)).toContain('423 Locked');
    expect(performance.now() - started).toBeLessThan(IDLE_MS);
    expect(lastUploadOutcome()).toMatchObject({ outcome: 'refused', code: 'locked' });
    expect((await broker.fake.readFile('Held/doc.bin'))?.length).toBe(1000);
    expect(broker.fake.uploadFolders()).toEqual([]);
  }, 60_000);
});
