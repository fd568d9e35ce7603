/**
 * The append-only, hash-chained audit log (DESIGN §5, Contract).
 *
 * Allows: one writer process per data directory (audit.lock); appends that resolve only
 * after their line is written and fsynced. Concurrent appends share one write and one
 * fsync (group commit). Denies: starting on a log whose chain does not verify or that is
 * short of its checkpoint; appending after any write failure (we cannot know what reached
 * the disk, so the broker must restart, which re-verifies). Never rewrites existing bytes:
 * the file is opened O_APPEND and a crash's torn tail is left in place and covered by a
 * `recovery` record naming its length and sha256.
 */
import { join } from 'node:path';
import type { Clock } from '../domain.js';
import type { Logger } from '../log.js';
import { sha256Hex, ZERO_HASH } from './canonical.js';
import { type ChainHead, ChainVerifier } from './chain.js';
import { CHECKPOINT_FILE, parseCheckpoint, writeCheckpoint } from './checkpoint.js';
import { AuditError, type AuditErrorCode } from './errors.js';
import { type AuditFileHandle, type AuditFs, errnoCode, nodeAuditFs, writeAll } from './fs.js';
import { acquireLock, type HeldLock, processIsAlive } from './lock.js';
import {
  type AuditRecord,
  buildRecord,
  judgeLine,
  MAX_LINE_BYTES,
  RESERVED_FIELDS,
} from './record.js';

export const LOG_FILE = 'audit.log';
const DEFAULT_WRITE_TIMEOUT_MS = 5000;
/** Upper bound of one group-commit write. */
const MAX_BATCH_BYTES = 4 * 1024 * 1024;
const READ_CHUNK = 64 * 1024;
/** Least time between two checkpoint writes while appends keep coming. */
const CHECKPOINT_SPACING_MS = 25;

export interface AuditLogDeps {
  now: Clock;
  /** A write+fsync (or checkpoint update) slower than this fails the log. Default 5000. */
  writeTimeoutMs?: number;
  fs?: AuditFs;
  logger?: Logger;
  /** For tests; default `process.pid` and `process.kill(pid, 0)`. */
  pid?: number;
  isAlive?: (pid: number) => boolean;
}

interface Pending {
  record: AuditRecord;
  bytes: Buffer;
  resolve: (r: AuditRecord) => void;
  reject: (e: unknown) => void;
}

export class AuditLog {
  /** What open() had to repair or take over (stale lock, torn tail, lagging checkpoint). */
  readonly warnings: string[] = [];
  private readonly queue: Pending[] = [];
  /** Head including queued, not yet durable records. */
  private tip: ChainHead;
  /** Head of what is fsynced. */
  private durableHead: ChainHead;
  private checkpointHead: ChainHead;
  private failure: AuditError | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private draining: Promise<void> | undefined;
  private checkpointing: Promise<void> | undefined;
  private cutPause: (() => void) | undefined;
  private readonly timeoutMs: number;

  private constructor(
    private readonly dir: string,
    private readonly handle: AuditFileHandle,
    private readonly lock: HeldLock,
    private readonly fs: AuditFs,
    private readonly deps: AuditLogDeps,
    head: ChainHead,
    checkpoint: ChainHead,
  ) {
    this.tip = head;
    this.durableHead = head;
    this.checkpointHead = checkpoint;
    this.timeoutMs = deps.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS;
  }

  /**
   * Takes the lock, verifies the whole chain against the checkpoint, covers a torn tail
   * with a recovery record, and brings the checkpoint up to the head. Rejects with
   * AuditError 'locked' or 'corrupt' (naming the file, the pid or the seq).
   */
  static async open(dataDir: string, deps: AuditLogDeps): Promise<AuditLog> {
    const fs = deps.fs ?? nodeAuditFs;
    await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
    const lock = await acquireLock(dataDir, {
      fs,
      pid: deps.pid ?? process.pid,
      isAlive: deps.isAlive ?? processIsAlive,
    });
    let handle: AuditFileHandle | undefined;
    try {
      // Read the checkpoint before the log (it never runs ahead of the log).
      const checkpoint = await readCheckpoint(fs, dataDir);
      handle = await fs.open(join(dataDir, LOG_FILE), 'a+', 0o600);
      const { size } = await handle.stat();
      const verifier = new ChainVerifier(checkpoint);
      await readInto(handle, size, (chunk) => verifier.push(chunk));
      const result = verifier.finish();
      const logFile = join(dataDir, LOG_FILE);
      if (!result.ok && result.region === undefined) {
        throw corrupt(logFile, result.seq, result.reason);
      }
      // Security: open writes the checkpoint before the first append, so a non-empty log
      // without one is never a crash shape: the checkpoint was removed.
      if (checkpoint === undefined && size > 0) {
        throw corrupt(
          logFile,
          Math.max(1, result.head.seq),
          `${CHECKPOINT_FILE} is missing but the log is not empty; its tail cannot be checked`,
        );
      }
      const log = new AuditLog(
        dataDir,
        handle,
        lock,
        fs,
        deps,
        result.head,
        // seq -1: no checkpoint file yet, so the first flush writes one (seq 0 on a fresh log).
        checkpoint ?? { seq: -1, hash: ZERO_HASH },
      );
      if (lock.warning !== undefined) log.warn(lock.warning);
      if (checkpoint !== undefined && result.head.seq > checkpoint.seq) {
        log.warn(
          `the log was ${result.head.seq - checkpoint.seq} record(s) ahead of ${CHECKPOINT_FILE} (a stop between the two writes); checkpoint updated`,
        );
      }
      if (!result.ok) {
        // result.region is set: everything after the last good record is a torn region.
        const region = result.region as NonNullable<typeof result.region>;
        const endsWithNewline = region.offset + region.bytes < size;
        await log.recover(region.bytes, region.sha256, !endsWithNewline, result.reason);
      } else if (result.tail.length > 0) {
        await log.recoverTail(result.tail);
      }
      await log.flushCheckpoint();
      return log;
    } catch (err) {
      await handle?.close().catch(() => undefined);
      await lock.release();
      throw err;
    }
  }

  /** The head of what is durable: `{seq, hash}` of the last fsynced record. */
  get head(): ChainHead {
    return { ...this.durableHead };
  }

  /**
   * Appends `{event, ...fields}` with the next seq; resolves after the line is fsynced.
   * Rejects with AuditError: 'invalid_fields' (reserved names or non-JSON values),
   * 'closed', 'write_failed' or 'timeout' (this and every later append).
   */
  append(event: string, fields: Record<string, unknown>): Promise<AuditRecord> {
    if (this.closed) return Promise.reject(new AuditError('closed', 'the audit log is closed'));
    if (this.failure !== undefined) return Promise.reject(this.laterFailure());
    // Security: only open() writes a recovery record that excuses torn bytes.
    if (event === 'recovery' && Object.hasOwn(fields, 'torn')) {
      return Promise.reject(
        new AuditError(
          'invalid_fields',
          'field "torn" of a recovery record is reserved for the audit log',
        ),
      );
    }
    return this.enqueue(event, fields, false);
  }

  /** Waits for queued appends and the checkpoint, closes the file and releases the lock. */
  close(): Promise<void> {
    this.closed = true;
    this.cutPause?.();
    this.closing ??= (async () => {
      await this.draining;
      await this.checkpointing;
      await this.withTimeout(this.handle.close(), 'close').catch((err: unknown) => {
        this.deps.logger?.warn('audit log close failed', { error: describe(err) });
      });
      await this.lock.release();
    })();
    return this.closing;
  }

  private enqueue(
    event: string,
    fields: Record<string, unknown>,
    newlineFirst: boolean,
  ): Promise<AuditRecord> {
    if (typeof event !== 'string' || event.length === 0) {
      return Promise.reject(new AuditError('invalid_fields', 'event must be a non-empty string'));
    }
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      return Promise.reject(new AuditError('invalid_fields', 'fields must be an object'));
    }
    // Security: the chain fields are set here only; a caller cannot forge seq/prev/hash.
    for (const name of RESERVED_FIELDS) {
      if (Object.hasOwn(fields, name)) {
        return Promise.reject(
          new AuditError('invalid_fields', `field "${name}" is reserved for the audit chain`),
        );
      }
    }
    let built: ReturnType<typeof buildRecord>;
    try {
      built = buildRecord(this.tip, new Date(this.deps.now()).toISOString(), event, fields);
    } catch (err) {
      return Promise.reject(
        new AuditError('invalid_fields', `audit fields are not plain JSON: ${describe(err)}`, {
          cause: err,
        }),
      );
    }
    const line = Buffer.from(built.line, 'utf8');
    if (line.length > MAX_LINE_BYTES) {
      return Promise.reject(
        new AuditError(
          'invalid_fields',
          `audit record of ${line.length} bytes exceeds ${MAX_LINE_BYTES}`,
        ),
      );
    }
    this.tip = { seq: built.record.seq, hash: built.record.hash };
    const bytes = Buffer.concat(newlineFirst ? [NEWLINE, line, NEWLINE] : [line, NEWLINE]);
    return new Promise<AuditRecord>((resolve, reject) => {
      this.queue.push({ record: built.record, bytes, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    // setImmediate lets every append issued in this turn (and the continuations of the
    // last batch's callers) join one batch.
    this.draining ??= new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.drain())
      .finally(() => {
        this.draining = undefined;
        if (this.queue.length > 0) this.kick();
      });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      if (this.failure !== undefined) {
        const err = this.laterFailure();
        for (const p of this.queue.splice(0)) p.reject(err);
        return;
      }
      const batch = takeBatch(this.queue);
      const bytes = Buffer.concat(batch.map((p) => p.bytes));
      try {
        await this.withTimeout(
          (async () => {
            await writeAll(this.handle, bytes);
            await this.handle.sync();
          })(),
          'write',
        );
      } catch (err) {
        const failure = this.fail(err, 'write');
        for (const p of batch) p.reject(failure);
        continue;
      }
      const last = batch[batch.length - 1] as Pending;
      this.durableHead = { seq: last.record.seq, hash: last.record.hash };
      for (const p of batch) p.resolve(p.record);
      this.scheduleCheckpoint();
    }
  }

  /** Brings the checkpoint up to the durable head now; rejects if that fails. */
  private async flushCheckpoint(): Promise<void> {
    this.scheduleCheckpoint();
    await this.checkpointing;
    if (this.failure !== undefined) throw this.failure;
  }

  private scheduleCheckpoint(): void {
    // Coalesced: at most one checkpoint write in flight, always of the latest durable head,
    // and under sustained load at most one per CHECKPOINT_SPACING_MS, because each one costs
    // two fsyncs that compete with the log's. The log may run ahead of the checkpoint (as
    // after a crash between the two writes); close() and open() bring it level.
    this.checkpointing ??= (async () => {
      let first = true;
      while (this.failure === undefined && this.checkpointHead.seq < this.durableHead.seq) {
        if (!first && !this.closed) await this.pause(CHECKPOINT_SPACING_MS);
        first = false;
        const target = this.durableHead;
        try {
          await this.withTimeout(writeCheckpoint(this.fs, this.dir, target), 'checkpoint');
          this.checkpointHead = target;
        } catch (err) {
          this.fail(err, 'checkpoint');
        }
      }
    })().finally(() => {
      this.checkpointing = undefined;
    });
  }

  /** A delay that close() cuts short. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.cutPause = done;
    }).finally(() => {
      this.cutPause = undefined;
    });
  }

  /** Puts the log into the failed state; every later append rejects. */
  private fail(err: unknown, what: 'write' | 'checkpoint'): AuditError {
    if (this.failure !== undefined) return this.failure;
    const code: AuditErrorCode =
      err instanceof AuditError && err.code === 'timeout' ? 'timeout' : 'write_failed';
    const target = what === 'write' ? join(this.dir, LOG_FILE) : join(this.dir, CHECKPOINT_FILE);
    this.failure = new AuditError(
      code,
      `audit ${what} to ${target} failed (${describe(err)}); the audit log refuses further appends: fix the disk and restart the broker, which re-verifies the log`,
      { cause: err },
    );
    this.deps.logger?.error('audit log failed', { code, file: target, error: describe(err) });
    return this.failure;
  }

  private laterFailure(): AuditError {
    const f = this.failure as AuditError;
    return new AuditError(
      f.code,
      `the audit log failed earlier and refuses appends: ${f.message}`,
      {
        cause: f,
      },
    );
  }

  private async withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new AuditError('timeout', `audit ${what} did not finish within ${this.timeoutMs} ms`),
          ),
        this.timeoutMs,
      );
    });
    // A hung operation that settles later must not become an unhandled rejection.
    work.catch(() => undefined);
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private warn(text: string): void {
    this.warnings.push(text);
    this.deps.logger?.warn(text, { file: join(this.dir, LOG_FILE) });
  }

  /** A final line that is a whole record but lost its newline just gets the newline. */
  private async recoverTail(tail: Buffer): Promise<void> {
    const verdict = judgeLine(tail, this.durableHead);
    if (verdict.ok) {
      await this.withTimeout(
        (async () => {
          await writeAll(this.handle, NEWLINE);
          await this.handle.sync();
        })(),
        'write',
      ).catch((err: unknown) => {
        throw this.fail(err, 'write');
      });
      this.tip = this.durableHead = { seq: verdict.record.seq, hash: verdict.record.hash };
      this.warn(`the last record (seq ${verdict.record.seq}) had no trailing newline; added one`);
      return;
    }
    await this.recover(tail.length, sha256Hex(tail), true, verdict.reason);
  }

  private async recover(
    bytes: number,
    sha256: string,
    newlineFirst: boolean,
    reason: string,
  ): Promise<void> {
    const seq = this.durableHead.seq + 1;
    await this.enqueue(
      'recovery',
      {
        torn: { bytes, sha256 },
        note: `${bytes} byte(s) after seq ${seq - 1} did not continue the chain (${reason}); left in place, not records`,
      },
      newlineFirst,
    );
    this.warn(
      `torn tail of ${bytes} byte(s) after seq ${seq - 1} in ${join(this.dir, LOG_FILE)} (sha256 ${sha256}); left in place and recorded as recovery seq ${seq}`,
    );
  }
}

const NEWLINE = Buffer.from('\n', 'utf8');

function takeBatch(queue: Pending[]): Pending[] {
  let size = 0;
  let n = 0;
  while (
    n < queue.length &&
    (n === 0 || size + (queue[n] as Pending).bytes.length <= MAX_BATCH_BYTES)
  ) {
    size += (queue[n] as Pending).bytes.length;
    n += 1;
  }
  return queue.splice(0, n);
}

async function readCheckpoint(fs: AuditFs, dir: string): Promise<ChainHead | undefined> {
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(join(dir, CHECKPOINT_FILE));
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
  const parsed = parseCheckpoint(bytes);
  if (!parsed.ok) throw corrupt(join(dir, CHECKPOINT_FILE), 0, parsed.reason);
  return parsed.head;
}

async function readInto(
  handle: AuditFileHandle,
  size: number,
  sink: (chunk: Buffer) => void,
): Promise<void> {
  const buf = Buffer.alloc(READ_CHUNK);
  let pos = 0;
  while (pos < size) {
    const { bytesRead } = await handle.read(buf, 0, Math.min(READ_CHUNK, size - pos), pos);
    if (bytesRead === 0) break;
    sink(buf.subarray(0, bytesRead));
    pos += bytesRead;
  }
}

function corrupt(file: string, seq: number, reason: string): AuditError {
  return new AuditError(
    'corrupt',
    `${file} does not verify at seq ${seq}: ${reason}. The broker will not start on it; run \`broker audit verify\` and compare with a backup`,
    { seq },
  );
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
