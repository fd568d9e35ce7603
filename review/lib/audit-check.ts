/**
 * Checks a daemon's audit log after a group of attacks: the chain verifies (hostile
 * strings in audit lines did not break it) and every `intent` has exactly one `outcome`
 * with the same correlation id (no operation ran unrecorded, none was recorded twice).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOG_FILE, verifyAudit } from '../../broker/audit/index.js';

export function auditVerdict(dir: string, lines: readonly Record<string, unknown>[]): string {
  const verified = verifyAudit(dir);
  if (!verified.ok) return `chain broken at seq ${verified.seq}: ${verified.reason}`;
  const outcomes = new Map<unknown, number>();
  for (const l of lines) {
    if (l.event === 'outcome')
      outcomes.set(l.correlation_id, (outcomes.get(l.correlation_id) ?? 0) + 1);
  }
  const intents = lines.filter((l) => l.event === 'intent');
  const orphan = intents.find((l) => outcomes.get(l.correlation_id) !== 1);
  if (orphan !== undefined) {
    const n = outcomes.get(orphan.correlation_id) ?? 0;
    return `intent seq ${String(orphan.seq)} (${String(orphan.tool)}) has ${n} outcomes`;
  }
  return `verifies, ${intents.length} intents each with one outcome`;
}

/**
 * Whether every byte of the log is printable ASCII or the newline ending a record
 * (issue 14.7): no reader meets a bidi override, a line separator or a control.
 * For logs this broker wrote; older logs hold raw UTF-8 and still verify.
 */
export function asciiVerdict(dir: string): string {
  const lines = readFileSync(join(dir, LOG_FILE), 'latin1').split('\n');
  const bad = lines.findIndex((line) => !/^[\x20-\x7e]*$/.test(line));
  if (bad < 0) return 'printable ASCII';
  const at = (lines[bad] ?? '').search(/[^\x20-\x7e]/);
  const byte = (lines[bad] ?? '').charCodeAt(at).toString(16).padStart(2, '0');
  return `line ${bad + 1} holds byte 0x${byte}`;
}
