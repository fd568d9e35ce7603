/** Shared helpers for the audit tests: temp dirs, a fixed clock, an instrumented fs. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  type AuditFileHandle,
  type AuditFs,
  AuditLog,
  type AuditRecord,
  nodeAuditFs,
} from '../../broker/audit/index.js';
import { appendLine } from '../../support/audit-line.js';

export const T0 = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

export function tempDir(prefix = 'broker-audit-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A clock that advances 1 ms per reading. */
export function tickingClock(start = T0): () => number {
  let t = start;
  return () => t++;
}

export interface FsFaults {
  /** Called before each write to audit.log; a returned error is thrown instead. */
  writeError?: () => Error | undefined;
  /** Called before each fsync of audit.log; a returned error is thrown instead. */
  syncError?: () => Error | undefined;
  /** fsync of audit.log never settles. */
  syncHangs?: boolean;
  /** Delay before each fsync of audit.log completes (ms). */
  syncDelayMs?: number;
  /** Error for each write to a checkpoint temp file. */
  checkpointWriteError?: () => Error | undefined;
}

/** A real node fs whose audit.log handle counts and can fail writes and fsyncs. */
export class InstrumentedFs implements AuditFs {
  logWrites = 0;
  logSyncs = 0;
  allSyncs = 0;
  /** Bytes of audit.log written through this fs, and the prefix of them that was fsynced. */
  written = Buffer.alloc(0);
  synced = Buffer.alloc(0);
  faults: FsFaults = {};
  /**
   * Where audit.log is really opened (a device such as /dev/full). A symlink in the data
   * folder would do it too, but the log never opens one (O_NOFOLLOW).
   */
  logTarget: string | undefined;

  open = async (
    path: string,
    flags: Parameters<AuditFs['open']>[1],
    mode?: number,
  ): Promise<AuditFileHandle> => {
    const name = basename(path);
    const isLog = name === 'audit.log';
    const real = await nodeAuditFs.open(
      isLog && this.logTarget !== undefined ? this.logTarget : path,
      flags,
      mode,
    );
    const isCheckpointTmp = name === 'audit.checkpoint.tmp';
    return {
      read: (b, o, l, p) => real.read(b, o, l, p),
      stat: () => real.stat(),
      close: () => real.close(),
      write: async (data) => {
        if (isLog) {
          this.logWrites += 1;
          const err = this.faults.writeError?.();
          if (err !== undefined) throw err;
        }
        if (isCheckpointTmp) {
          const err = this.faults.checkpointWriteError?.();
          if (err !== undefined) throw err;
        }
        const r = await real.write(data);
        if (isLog)
          this.written = Buffer.concat([
            this.written,
            Buffer.from(data.subarray(0, r.bytesWritten)),
          ]);
        return r;
      },
      sync: async () => {
        this.allSyncs += 1;
        if (!isLog) return real.sync();
        this.logSyncs += 1;
        const err = this.faults.syncError?.();
        if (err !== undefined) throw err;
        if (this.faults.syncHangs === true) return new Promise<void>(() => undefined);
        const upTo = this.written.length;
        if (this.faults.syncDelayMs !== undefined) {
          await new Promise((r) => setTimeout(r, this.faults.syncDelayMs));
        }
        await real.sync();
        this.synced = this.written.subarray(0, upTo);
      },
    };
  };

  readFile = nodeAuditFs.readFile;
  rename = nodeAuditFs.rename;
  link = nodeAuditFs.link;
  unlink = nodeAuditFs.unlink;
  mkdir = nodeAuditFs.mkdir;
}

export function errnoError(code: string, message: string): Error {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

/** Writes `n` records through a real AuditLog and closes it. */
export async function writeLog(dir: string, n: number): Promise<AuditRecord[]> {
  const log = await AuditLog.open(dir, { now: tickingClock() });
  const out: AuditRecord[] = [];
  for (let i = 0; i < n; i += 1) {
    out.push(
      await appendLine(log, 'intent', {
        surface: 'agent',
        tool: 'read',
        correlation_id: `c-${i}`,
        instance: 'personal',
        path: `Docs/ä ${i}.txt`,
        n: i,
      }),
    );
  }
  await log.close();
  return out;
}

export const logPath = (dir: string): string => join(dir, 'audit.log');
export const checkpointPath = (dir: string): string => join(dir, 'audit.checkpoint');
export const readLog = (dir: string): Buffer => readFileSync(logPath(dir));
export const writeLogBytes = (dir: string, bytes: Buffer | string): void =>
  writeFileSync(logPath(dir), bytes);
export const logLines = (dir: string): string[] =>
  readLog(dir)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.length > 0);
