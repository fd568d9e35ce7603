/**
 * Issue 14.8: whoever can write the data folder can rewrite history so that plain
 * `broker audit verify` passes (every hash and the checkpoint recomputed). An anchor
 * (`SEQ:HASH`, posted to the approval room) is held outside the host, so
 * `verify --anchor` catches it. Every attack goes through the real CLI subprocess.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type AuditRecord, verifyAudit } from '../../broker/audit/index.js';
import { serializeCheckpoint } from '../../broker/audit/checkpoint.js';
import { ZERO_HASH } from '../../broker/audit/canonical.js';
import { createAuditCommand } from '../../cli/owner/audit.js';
import { rewriteHistory } from '../../support/audit-rewrite.js';
import { runCli } from '../../support/processes.js';
import { checkpointPath, logPath, tempDir, writeLog } from './helpers.js';

const verify = (dir: string, ...anchors: string[]) =>
  runCli(['audit', 'verify', '--data-dir', dir, ...anchors.flatMap((a) => ['--anchor', a])], {});

const anchorOf = (r: AuditRecord | undefined): string => `${r?.seq}:${r?.hash}`;

describe('attack: rewritten history (a record edited, every later hash and the checkpoint recomputed)', () => {
  it('passes plain verify, and fails verify --anchor naming the anchor (exit 4)', async () => {
    const dir = tempDir();
    const original = await writeLog(dir, 5);
    const posted = anchorOf(original[3]);
    rewriteHistory(dir, (recs) =>
      recs.map((r) => (r.seq === 2 ? { ...r, path: 'Docs/nothing to see.txt' } : r)),
    );
    expect(readFileSync(logPath(dir), 'utf8')).toContain('nothing to see');

    const plain = await verify(dir);
    expect(plain.code).toBe(0);
    expect(plain.json).toMatchObject({ status: 'ok', records: 5 });

    const anchored = await verify(dir, posted);
    expect(anchored.code).toBe(4);
    expect(anchored.json).toMatchObject({ status: 'corrupt', seq: 4, anchor: posted });
    expect(anchored.json.error).toMatch(/rewritten/);
    expect(anchored.json.next_step).toMatch(/compromised/);
    expect(anchored.stderr).toContain(posted);
  });

  it('every anchor from before the edit on fails; one from before the edited record passes', async () => {
    const dir = tempDir();
    const original = await writeLog(dir, 4);
    rewriteHistory(dir, (recs) => recs.map((r) => (r.seq === 3 ? { ...r, n: 99 } : r)));
    // What an anchor does not prove: records after it (here seq 3 and 4, after anchor 2).
    expect((await verify(dir, anchorOf(original[1]))).code).toBe(0);
    for (const rec of original.slice(2)) {
      const r = await verify(dir, anchorOf(original[1]), anchorOf(rec));
      expect(r.code).toBe(4);
      expect(r.json).toMatchObject({ seq: rec.seq, anchor: anchorOf(rec) });
    }
  });
});

describe('attack: truncation with the checkpoint rewritten to the shorter head', () => {
  it('passes plain verify, and fails verify --anchor: the anchored record is gone (exit 4)', async () => {
    const dir = tempDir();
    const original = await writeLog(dir, 5);
    const posted = anchorOf(original[4]);
    rewriteHistory(dir, (recs) => recs.slice(0, 3));

    expect((await verify(dir)).json).toMatchObject({ status: 'ok', records: 3 });
    const anchored = await verify(dir, posted);
    expect(anchored.code).toBe(4);
    expect(anchored.json).toMatchObject({ status: 'corrupt', seq: 4, anchor: posted });
    expect(anchored.json.error).toMatch(/end at seq 3.*names seq 5/);
  });

  it('a log cut to nothing, checkpoint and all, fails against any anchor', async () => {
    const dir = tempDir();
    const original = await writeLog(dir, 2);
    writeFileSync(logPath(dir), '');
    writeFileSync(checkpointPath(dir), serializeCheckpoint({ seq: 0, hash: ZERO_HASH }));
    expect((await verify(dir)).code).toBe(0);
    expect(await verify(dir, anchorOf(original[0]))).toMatchObject({
      code: 4,
      json: { seq: 1, anchor: anchorOf(original[0]) },
    });
  });
});

describe('verify --anchor on an intact log', () => {
  it('passes with every anchor the room holds, in any order and case', async () => {
    const dir = tempDir();
    const original = await writeLog(dir, 3);
    const r = await verify(
      dir,
      anchorOf(original[2]),
      anchorOf(original[0]).toUpperCase(),
      anchorOf(original[1]),
    );
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ status: 'ok', records: 3, anchors: 3 });
  });

  it('an anchor the log contradicts is named even when another one holds', () => {
    const dir = tempDir();
    return writeLog(dir, 2).then((original) => {
      const wrong = { seq: 2, hash: 'f'.repeat(64) };
      const r = verifyAudit(dir, [{ seq: 1, hash: original[0]?.hash ?? '' }, wrong]);
      expect(r).toMatchObject({ ok: false, seq: 2, anchor: wrong });
    });
  });

  it.each([
    ['no hash', '3'],
    ['a short hash', `3:${'a'.repeat(12)}`],
    ['seq 0', `0:${'a'.repeat(64)}`],
    ['a negative seq', `-1:${'a'.repeat(64)}`],
    ['the posted prefix kept', `audit anchor 3:${'a'.repeat(64)}`],
  ])('refuses an anchor with %s as a usage error (exit 1)', async (_what, anchor) => {
    const dir = tempDir();
    await writeLog(dir, 1);
    let out = '';
    const command = createAuditCommand({
      stdout: (t) => (out += t),
      stderr: () => undefined,
      cwd: () => dir,
    });
    expect(await command.run(['verify', '--data-dir', dir, `--anchor=${anchor}`])).toBe(1);
    expect(JSON.parse(out)).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/SEQ:HASH/),
    });
  });

  it('refuses --anchor without a value (exit 1)', async () => {
    const dir = tempDir();
    await writeLog(dir, 1);
    const r = await runCli(['audit', 'verify', '--data-dir', dir, '--anchor'], {});
    expect(r.code).toBe(1);
    expect(r.json.error).toMatch(/--anchor needs SEQ:HASH/);
  });
});
