/**
 * `data_dir/audit.checkpoint`: the durable head `{"seq":N,"hash":"…"}` (docs/contracts.md
 * §4). It moves only after the records it names are fsynced, so the log may be
 * ahead of it (a crash between the two writes) but never behind it.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { canonicalJson, ZERO_HASH } from './canonical.js';
import type { ChainHead } from './chain.js';
import { type AuditFs, syncDir, writeAll } from './fs.js';

export const CHECKPOINT_FILE = 'audit.checkpoint';

const CheckpointSchema = z
  .object({
    seq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    hash: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict()
  .refine((c) => c.seq > 0 || c.hash === ZERO_HASH, { message: 'seq 0 must carry 64 zeros' });

export function serializeCheckpoint(head: ChainHead): string {
  return `${canonicalJson({ seq: head.seq, hash: head.hash })}\n`;
}

export type CheckpointParse = { ok: true; head: ChainHead } | { ok: false; reason: string };

/** Security: the stored bytes must be exactly the canonical form, so any edit shows. */
export function parseCheckpoint(bytes: Buffer): CheckpointParse {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { ok: false, reason: 'audit.checkpoint is not valid JSON' };
  }
  const parsed = CheckpointSchema.safeParse(value);
  if (!parsed.success) {
    return { ok: false, reason: 'audit.checkpoint is not {"seq":N,"hash":"<64 hex>"}' };
  }
  const head = { seq: parsed.data.seq, hash: parsed.data.hash };
  if (!Buffer.from(serializeCheckpoint(head), 'utf8').equals(bytes)) {
    return { ok: false, reason: 'audit.checkpoint is not in canonical form (edited)' };
  }
  return { ok: true, head };
}

/** Replaces the checkpoint atomically and durably: temp + fsync + rename + fsync dir. */
export async function writeCheckpoint(fs: AuditFs, dir: string, head: ChainHead): Promise<void> {
  const file = join(dir, CHECKPOINT_FILE);
  const tmp = `${file}.tmp`;
  const handle = await fs.open(tmp, 'w', 0o600);
  try {
    await writeAll(handle, Buffer.from(serializeCheckpoint(head), 'utf8'));
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, file);
  await syncDir(fs, dir);
}
