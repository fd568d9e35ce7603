/**
 * The log read back by the broker itself (undo, operations/undo/): every record, in
 * order, each checked as `broker audit verify` checks it. Security: undo puts back what
 * the log says an operation changed, so it acts only on a log that verifies; a record
 * that does not continue the chain ends the read with the seq where it broke, and the
 * caller refuses. Read in chunks with the event loop free between them (a long log must
 * not stall the daemon), up to the size the file had when the read began: a record
 * being written meanwhile is the writer's, not undo's (undo writes its own lines after).
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { ChainVerifier } from './chain.js';
import { errnoCode } from './fs.js';
import { LOG_FILE } from './log.js';
import type { AuditRecord } from './record.js';

export type HistoryRead =
  | { readonly ok: true; readonly records: number }
  | { readonly ok: false; readonly seq: number; readonly reason: string };

const READ_CHUNK = 256 * 1024;

/** Reads `<dataDir>/audit.log`, handing every record that continues the chain to `onRecord`. */
export async function readHistory(
  dataDir: string,
  onRecord: (record: AuditRecord) => void,
): Promise<HistoryRead> {
  const verifier = new ChainVerifier(undefined, [], undefined, onRecord);
  let file;
  try {
    file = await open(join(dataDir, LOG_FILE), 'r');
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return { ok: true, records: 0 };
    throw error;
  }
  try {
    let left = (await file.stat()).size;
    const buffer = Buffer.alloc(READ_CHUNK);
    while (left > 0) {
      const { bytesRead } = await file.read(buffer, 0, Math.min(READ_CHUNK, left), null);
      if (bytesRead === 0) break;
      left -= bytesRead;
      verifier.push(buffer.subarray(0, bytesRead));
    }
  } finally {
    await file.close();
  }
  const result = verifier.finish();
  return result.ok
    ? { ok: true, records: result.records }
    : { ok: false, seq: result.seq, reason: result.reason };
}
