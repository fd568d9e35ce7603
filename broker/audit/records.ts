/**
 * Reading the log's records from a byte offset, for readers that look at what the
 * broker did rather than at the chain (reconciliation): each complete line parsed, with
 * the offset it starts at. A line still being written (no newline yet) and anything that
 * is not a JSON object (a torn tail) are skipped; the chain's own verification is
 * `broker audit verify`'s (verify.ts), not this. Safe beside the writer: it only reads.
 */
import { open } from 'node:fs/promises';
import type { JsonObject } from '../base/protocol.js';

const CHUNK = 256 * 1024;

/**
 * Calls `each` with every record from `from` (a line's first byte) to the last complete
 * line, in order; resolves to the offset after that line (where a later read goes on).
 * A missing log has no records (resolves to `from`).
 */
export async function readRecords(
  file: string,
  from: number,
  each: (record: Readonly<JsonObject>, offset: number) => void,
): Promise<number> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return from;
    throw error;
  }
  try {
    let position = from;
    let carry = Buffer.alloc(0);
    let lineStart = from;
    for (;;) {
      const buffer = Buffer.alloc(CHUNK);
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      let data = Buffer.concat([carry, buffer.subarray(0, bytesRead)]);
      let newline = data.indexOf(0x0a);
      while (newline >= 0) {
        const line = data.subarray(0, newline).toString('utf8');
        const record = parsed(line);
        if (record !== undefined) each(record, lineStart);
        lineStart += newline + 1;
        data = data.subarray(newline + 1);
        newline = data.indexOf(0x0a);
      }
      carry = Buffer.from(data);
    }
    return lineStart;
  } finally {
    await handle.close();
  }
}

function parsed(line: string): Readonly<JsonObject> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as JsonObject)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `offset` when a line of the log starts there (0, or just after a newline, within the
 * file); otherwise 0, so that a reader whose offset no longer fits the file (a log moved
 * away and begun anew) reads it whole rather than from the middle of a line.
 */
export async function lineStart(file: string, offset: number): Promise<number> {
  if (offset <= 0) return 0;
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  try {
    const byte = Buffer.alloc(1);
    const { bytesRead } = await handle.read(byte, 0, 1, offset - 1);
    return bytesRead === 1 && byte[0] === 0x0a ? offset : 0;
  } finally {
    await handle.close();
  }
}
