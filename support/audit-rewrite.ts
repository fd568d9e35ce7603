/**
 * The attack anchors defend against (issue 14.8): someone who can write the data
 * folder rewrites the audit log's records, recomputes every hash from seq 1 and
 * rewrites audit.checkpoint to the new head, so plain `broker audit verify` passes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ZERO_HASH } from '../broker/audit/canonical.js';
import { CHECKPOINT_FILE, serializeCheckpoint } from '../broker/audit/checkpoint.js';
import { LOG_FILE } from '../broker/audit/log.js';
import { buildRecord, RESERVED_FIELDS } from '../broker/audit/record.js';

export type LoggedRecord = Record<string, unknown>;

/** `edit` gets the parsed records and returns the history to write instead. */
export function rewriteHistory(
  dataDir: string,
  edit: (records: LoggedRecord[]) => LoggedRecord[],
): void {
  const records = readFileSync(join(dataDir, LOG_FILE), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as LoggedRecord);
  let head = { seq: 0, hash: ZERO_HASH };
  let text = '';
  for (const rec of edit(records)) {
    const fields: LoggedRecord = { ...rec };
    for (const name of RESERVED_FIELDS) delete fields[name];
    const built = buildRecord(head, String(rec.ts), String(rec.event), fields);
    head = { seq: built.record.seq, hash: built.record.hash };
    text += `${built.line}\n`;
  }
  writeFileSync(join(dataDir, LOG_FILE), text);
  writeFileSync(join(dataDir, CHECKPOINT_FILE), serializeCheckpoint(head));
}
