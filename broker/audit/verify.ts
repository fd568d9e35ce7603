/**
 * `verifyAudit(dataDir)`: the offline check behind `broker audit verify` (docs/contracts.md §4, §6).
 * Recomputes the whole chain and compares it with audit.checkpoint and with the anchors
 * given (heads posted to the approval room, which the host cannot rewrite). Read-only;
 * takes no lock, so it can run beside a live broker (the checkpoint is read first
 * because it never runs ahead of the log).
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { type ChainHead, ChainVerifier } from './chain.js';
import { CHECKPOINT_FILE, parseCheckpoint } from './checkpoint.js';
import { errnoCode } from './fs.js';
import { LOG_FILE } from './log.js';
import { SchemaFindings, type SchemaReport } from './reading.js';

/**
 * Whether the chain is intact and, apart from it, `schema`: the records of the chain's
 * valid prefix whose event this version does not read (reading.ts). A finding never makes
 * a log corrupt: older brokers' lines and newer events verify.
 */
export type VerifyResult = ChainVerdict & { schema: SchemaReport };

type ChainVerdict =
  | { ok: true; records: number; head: ChainHead; checkpoint: ChainHead | undefined }
  | { ok: false; seq: number; reason: string; anchor?: ChainHead };

const READ_CHUNK = 256 * 1024;

export function verifyAudit(dataDir: string, anchors: readonly ChainHead[] = []): VerifyResult {
  let cpBytes: Buffer | undefined;
  try {
    cpBytes = readFileSync(join(dataDir, CHECKPOINT_FILE));
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
  const check = startVerify(cpBytes, anchors);
  readLog(join(dataDir, LOG_FILE), check.push);
  return check.finish();
}

/** The same check on bytes in memory: the log, and the checkpoint file (undefined = absent). */
export function verifyAuditBytes(
  log: Buffer,
  checkpoint: Buffer | undefined,
  anchors: readonly ChainHead[] = [],
): VerifyResult {
  const check = startVerify(checkpoint, anchors);
  check.push(log);
  return check.finish();
}

function startVerify(
  cpBytes: Buffer | undefined,
  anchors: readonly ChainHead[],
): {
  push: (chunk: Buffer) => void;
  finish: () => VerifyResult;
} {
  const cp = cpBytes === undefined ? undefined : parseCheckpoint(cpBytes);
  const findings = new SchemaFindings();
  const verifier = new ChainVerifier(
    cp?.ok === true ? cp.head : undefined,
    anchors,
    undefined,
    (record) => findings.add(record.seq, record),
  );
  return {
    push: (chunk) => verifier.push(chunk),
    finish: () => ({ ...chainVerdict(verifier, cp), schema: findings.report() }),
  };
}

/** The chain's verdict, the checkpoint's and the tail's, as `verify` reports it. */
function chainVerdict(
  verifier: ChainVerifier,
  cp: ReturnType<typeof parseCheckpoint> | undefined,
): ChainVerdict {
  const result = verifier.finish();
  if (!result.ok) {
    const { seq, reason, anchor } = result;
    return anchor === undefined ? { ok: false, seq, reason } : { ok: false, seq, reason, anchor };
  }
  if (result.tail.length > 0) {
    return {
      ok: false,
      seq: result.head.seq + 1,
      reason: `the log ends in ${result.tail.length} byte(s) without a newline after seq ${result.head.seq} (a torn write, or an edit); starting the broker records a recovery for them`,
    };
  }
  if (cp !== undefined && !cp.ok) return { ok: false, seq: result.head.seq, reason: cp.reason };
  if (cp === undefined && result.records > 0) {
    return {
      ok: false,
      seq: result.head.seq,
      reason: `${CHECKPOINT_FILE} is missing but the log holds ${result.records} record(s); a truncated tail could not be detected`,
    };
  }
  return {
    ok: true,
    records: result.records,
    head: result.head,
    checkpoint: cp?.ok === true ? cp.head : undefined,
  };
}

function readLog(file: string, sink: (chunk: Buffer) => void): void {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw err;
  }
  try {
    const buf = Buffer.alloc(READ_CHUNK);
    for (;;) {
      const n = readSync(fd, buf, 0, READ_CHUNK, null);
      if (n === 0) break;
      sink(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}
