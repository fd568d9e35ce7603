/**
 * Attack, on the real server: an upload that cannot be stored. The owner's quota is full
 * (the broker's space guard refuses it before Nextcloud would answer 507), or another
 * client of hers holds a token lock on the file (Nextcloud answers 423 on the commit). The `broker` CLI must get the answer at once, with Nextcloud's cause, and
 * exit with a refusal: 3, or 5 for the lock; never 2 ("retry later"). The audit outcome
 * names the same cause, and nothing is stored.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { useRealRig } from './rig.js';

const MiB = 1024 * 1024;
/** The broker drops a blob stream idle this long; an answer "at once" comes well before. */
const IDLE_MS = 20_000;
const rig = useRealRig({ chunkSize: 4 * MiB, putLimit: 4 * MiB, requestTimeoutMs: IDLE_MS });

const lastUploadOutcome = () =>
  rig.broker
    .auditLines()
    .filter((l) => l.tool === 'blob_put' && l.event === 'outcome')
    .at(-1);

/** Runs `body` with the owner's quota at 1 MB, and puts it back to none afterwards. */
async function withFullQuota(body: () => Promise<void>): Promise<void> {
  await rig.server.occ('user:setting', rig.server.owner.user, 'files', 'quota', '1 MB');
  try {
    await body();
  } finally {
    await rig.server.occ('user:setting', rig.server.owner.user, 'files', 'quota', 'none');
  }
}

/** Pushes `size` fresh bytes to `folder/name` with the CLI; its result and duration. */
async function push(folder: string, name: string, size: number) {
  await rig.owner.mkdirs(folder);
  await rig.broker.grant([{ path: folder, mode: 'write' }]);
  const stage = rig.stage();
  const src = join(stage, name);
  writeFileSync(src, randomBytes(size));
  const started = performance.now();
  const result = await rig.cli(['push', `personal:${folder}/${name}`, src], stage);
  return { result, ms: performance.now() - started };
}

describe('attack: Nextcloud refuses an upload mid-body', () => {
  // With the space guard (issue: quota-driven expiry), a full quota is refused by the
  // broker before any byte reaches Nextcloud: the 507 itself is reached only when the
  // space goes between the guard's read and the upload, which the fake's quota fault
  // plays (test/cli/client/upload-refusals.test.ts). Either way: at once, exit 3, nothing stored.
  it.each([
    ['a chunked push', 'Full', 'big.bin', 12 * MiB],
    ['a create-only PUT', 'FullSmall', 'small.bin', 3 * MiB],
  ])(
    'a full quota, %s: refused at once (exit 3), the cause audited',
    async (_what, folder, name, size) => {
      await withFullQuota(async () => {
        const { result, ms } = await push(folder, name, size);
        expect(result.code).toBe(ExitCode.refused);
        expect(result.json).toMatchObject({ status: 'failed', code: 'insufficient_space' });
        expect(ms).toBeLessThan(IDLE_MS);
        expect(
          rig.broker
            .auditLines()
            .filter((l) => l.tool === 'write' && l.event === 'outcome')
            .at(-1),
        ).toMatchObject({
          outcome: 'refused',
          code: 'insufficient_space',
          path: `${folder}/${name}`,
        });
        expect(await rig.owner.exists(`${folder}/${name}`)).toBe(false);
      });
    },
    120_000,
  );

  it('423 on the commit (another client holds a lock): exit 5, the cause audited', async () => {
    await rig.owner.writeFile('Held/doc.txt', 'v1');
    await rig.broker.grant([{ path: 'Held', mode: 'write' }]);
    // Locked before the fetch: the etag the CLI holds is current, only the lock is in the way.
    await rig.owner.tokenLock('Held/doc.txt');
    const stage = rig.stage();
    const fetched = await rig.cli(['fetch', 'personal:Held/doc.txt'], stage);
    expect(fetched.code).toBe(ExitCode.ok);
    const local = String(fetched.json.local_path);
    writeFileSync(local, 'v2 from the agent');
    const started = performance.now();
    const result = await rig.cli(['push', 'personal:Held/doc.txt', local], stage);
    expect(result.code).toBe(ExitCode.clobber);
    expect(result.json).toMatchObject({ status: 'failed', code: 'locked' });
    expect(performance.now() - started).toBeLessThan(IDLE_MS);
    expect(lastUploadOutcome()).toMatchObject({ outcome: 'refused', code: 'locked' });
    expect(await rig.owner.read('Held/doc.txt')).toBe('v1');
  }, 120_000);
});
