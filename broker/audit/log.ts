/**
 * The append-only, hash-chained audit log (docs/contracts.md §4).
 *
 * Allows: one writer process per data directory (audit.lock); appends that resolve only
 * after their line is written and fsynced. Concurrent appends share one write and one
 * fsync (group commit, writer.ts). Denies: starting on a log whose chain does not verify
 * or that is short of its checkpoint; appending after any write failure (we cannot know
 * what reached the disk, so the broker must restart, which re-verifies), except that
 * after a full disk the log re-reads and re-verifies its own tail and resumes once a
 * write succeeds again (resume.ts). Never rewrites
 * existing bytes: the file is opened O_APPEND, and a crash's torn tail is left in place
 * and covered by a `recovery` record naming its length and sha256.
 */
import { join } from 'node:path';
import type { Clock } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import { secondsSince, type MetricsPort } from '../base/metrics.js';
import { iso } from '../base/time.js';
import { sha256Hex, ZERO_HASH } from './canonical.js';
import { type ChainHead, type ChainResult, ChainVerifier } from './chain.js';
import { CHECKPOINT_FILE, parseCheckpoint } from './checkpoint.js';
import { Checkpointer } from './checkpointer.js';
import { AuditError } from './errors.js';
import type { AuditEvent } from './events.js';
import type { AuditSink } from './sink.js';
import { errorMessage } from '../base/errors.js';
import { FailureState } from './failure.js';
import { type AuditFileHandle, type AuditFs, errnoCode, nodeAuditFs } from './fs.js';
import { acquireLock, type HeldLock, processIsAlive } from './lock.js';
import { Resumer } from './resume.js';
import {
  type AuditRecord,
  buildRecord,
  judgeLine,
  MAX_LINE_BYTES,
  RESERVED_FIELDS,
} from './record.js';
import { withTimeout } from './timeout.js';
import { type Durability, GroupCommitWriter } from './writer.js';
import type { JsonObject } from '../base/protocol.js';

export const LOG_FILE = 'audit.log';
const DEFAULT_WRITE_TIMEOUT_MS = 5000;
const READ_CHUNK = 64 * 1024;
const NEWLINE = Buffer.from('\n', 'utf8');

export interface AuditLogDeps {
  now: Clock;
  /** A write+fsync (or checkpoint update) slower than this fails the log. Default 5000. */
  writeTimeoutMs?: number;
  /** Default: node:fs/promises. */
  fs?: AuditFs;
  logger?: Logger;
  /** For tests; default `process.pid` and `process.kill(pid, 0)`. */
  pid?: number;
  isAlive?: (pid: number) => boolean;
  /** Times each append and each write+fsync (default: not timed). */
  metrics?: Pick<MetricsPort, 'auditAppended' | 'auditSynced'>;
}

export class AuditLog implements AuditSink<AuditRecord> {
  /** What open() had to repair or take over (stale lock, torn tail, lagging checkpoint). */
  readonly warnings: string[] = [];
  /** Head including queued, not yet durable records: the next record's prev. */
  #tip: ChainHead;
  /** Head of what is fsynced. */
  #durableHead: ChainHead;
  #closed = false;
  #closing: Promise<void> | undefined;
  readonly #failure: FailureState;
  readonly #writer: GroupCommitWriter;
  readonly #checkpointer: Checkpointer;
  readonly #resumer: Resumer;
  readonly #timeoutMs: number;
  readonly #file: string;

  readonly #handle: AuditFileHandle;
  readonly #lock: HeldLock;
  readonly #deps: AuditLogDeps;

  private constructor(
    dir: string,
    handle: AuditFileHandle,
    lock: HeldLock,
    fs: AuditFs,
    deps: AuditLogDeps,
    head: ChainHead,
    checkpoint: ChainHead,
    size: number,
  ) {
    this.#handle = handle;
    this.#lock = lock;
    this.#deps = deps;
    this.#tip = head;
    this.#durableHead = head;
    this.#file = join(dir, LOG_FILE);
    this.#timeoutMs = deps.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS;
    this.#failure = new FailureState(deps.logger, deps.now);
    this.#checkpointer = new Checkpointer(
      { fs, dir, timeoutMs: this.#timeoutMs, failure: this.#failure },
      checkpoint,
    );
    this.#writer = new GroupCommitWriter({
      handle,
      file: this.#file,
      timeoutMs: this.#timeoutMs,
      failure: this.#failure,
      onDurable: (h) => {
        this.#durableHead = h;
        this.#checkpointer.advance(h);
      },
      size,
      ...(deps.metrics === undefined ? {} : { onSynced: (s) => deps.metrics?.auditSynced(s) }),
    });
    this.#resumer = new Resumer({
      now: deps.now,
      failure: this.#failure,
      writer: this.#writer,
      handle,
      file: this.#file,
      logger: deps.logger,
      head: () => this.#durableHead,
      commit: (h) => {
        this.#tip = this.#durableHead = h;
      },
      checkpoint: (h) => this.#checkpointer.flush(h),
    });
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
      const logFile = join(dataDir, LOG_FILE);
      handle = await fs.open(logFile, 'a+', 0o600);
      const { size } = await handle.stat();
      const result = await verifyHandle(handle, size, checkpoint);
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
      // seq -1: no checkpoint file yet, so the first flush writes one (seq 0 on a fresh log).
      const written = checkpoint ?? { seq: -1, hash: ZERO_HASH };
      const log = new AuditLog(dataDir, handle, lock, fs, deps, result.head, written, size);
      if (lock.warning !== undefined) log.#warn(lock.warning);
      if (checkpoint !== undefined && result.head.seq > checkpoint.seq) {
        log.#warn(
          `the log was ${result.head.seq - checkpoint.seq} record(s) ahead of ${CHECKPOINT_FILE} (a stop between the two writes); checkpoint updated`,
        );
      }
      if (!result.ok) {
        // The region runs from the first bad line to the end of the file.
        const region = result.region as NonNullable<typeof result.region>;
        const endsWithNewline = region.offset + region.bytes < size;
        await log.#recover(region.bytes, region.sha256, !endsWithNewline, result.reason);
      } else if (result.tail.length > 0) {
        await log.#recoverTail(result.tail);
      }
      await log.#checkpointer.flush(log.#durableHead);
      return log;
    } catch (err) {
      await handle?.close().catch(() => undefined);
      await lock.release();
      throw err;
    }
  }

  /** The head of what is durable: `{seq, hash}` of the last fsynced record. */
  get head(): ChainHead {
    return { ...this.#durableHead };
  }

  /**
   * Appends the event (one of events.ts) with the next seq; resolves after the line is fsynced.
   * Rejects with AuditError: 'invalid_fields' (reserved names, non-JSON values, over
   * 1 MiB), 'closed', 'write_failed' or 'timeout' (this and every later append, until
   * the log resumes after a full disk: resume.ts).
   */
  append(event: AuditEvent): Promise<AuditRecord> {
    return this.#append(event, 'durable');
  }

  /**
   * Appends the event as append() does, but resolves once its line is written, before
   * its fsync (writer.ts: the next batch's, or one SYNC_SOON_MS later). For a line that
   * no decision waits on: the outcome of an operation that changed nothing, which the
   * caller may answer before the line is durable. Never for an intent.
   */
  appendWritten(event: AuditEvent): Promise<AuditRecord> {
    return this.#append(event, 'written');
  }

  #append({ event, ...fields }: AuditEvent, durability: Durability): Promise<AuditRecord> {
    const how = { internal: false, newlineFirst: false, durability };
    const started = performance.now();
    const appended =
      this.#closed || !this.#failure.failed
        ? this.#enqueue(event, fields, how)
        : // Security: while failed, an append first tries to resume (a full disk only, at
          // most one try per delay); until a recovery record is durable, it is refused.
          this.#resumer.ready().then(() => this.#enqueue(event, fields, how));
    const { metrics } = this.#deps;
    if (metrics === undefined) return appended;
    return appended.then((record) => {
      metrics.auditAppended(secondsSince(started));
      return record;
    });
  }

  /** Waits for queued appends and the checkpoint, closes the file and releases the lock. */
  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= (async () => {
      await this.#resumer.idle();
      await this.#writer.idle();
      await this.#checkpointer.flush(this.#durableHead).catch(() => undefined); // failure logged
      await withTimeout(this.#handle.close(), this.#timeoutMs, 'close').catch((err: unknown) => {
        this.#deps.logger?.warn('audit log close failed', { error: errorMessage(err) });
      });
      await this.#lock.release();
    })();
    return this.#closing;
  }

  #enqueue(
    event: string,
    fields: JsonObject,
    how: { internal: boolean; newlineFirst: boolean; durability?: Durability },
  ): Promise<AuditRecord> {
    if (this.#closed) return Promise.reject(new AuditError('closed', 'the audit log is closed'));
    const later = this.#failure.later();
    if (later !== undefined) {
      this.#failure.noteRefused();
      return Promise.reject(later);
    }
    const invalid = (message: string, cause?: unknown): Promise<never> =>
      Promise.reject(new AuditError('invalid_fields', message, { cause }));
    if (typeof event !== 'string' || event.length === 0) {
      return invalid('event must be a non-empty string');
    }
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      return invalid('fields must be an object');
    }
    // Security: the chain fields are set here only; a caller cannot forge seq/prev/hash.
    for (const name of RESERVED_FIELDS) {
      if (Object.hasOwn(fields, name))
        return invalid(`field "${name}" is reserved for the audit chain`);
    }
    // Security: only open() writes a recovery record that excuses torn bytes.
    if (!how.internal && event === 'recovery' && Object.hasOwn(fields, 'torn')) {
      return invalid('field "torn" of a recovery record is reserved for the audit log');
    }
    const now = this.#deps.now();
    if (!Number.isFinite(now)) return invalid(`the clock returned ${now}, not a time`);
    let built: ReturnType<typeof buildRecord>;
    try {
      built = buildRecord(this.#tip, iso(now), event, fields);
    } catch (err) {
      return invalid(`audit fields are not plain JSON: ${errorMessage(err)}`, err);
    }
    const line = Buffer.from(built.line, 'utf8');
    if (line.length > MAX_LINE_BYTES) {
      return invalid(`audit record of ${line.length} bytes exceeds ${MAX_LINE_BYTES}`);
    }
    this.#tip = { seq: built.record.seq, hash: built.record.hash };
    const parts = how.newlineFirst ? [NEWLINE, line, NEWLINE] : [line, NEWLINE];
    return this.#writer.submit(built.record, Buffer.concat(parts), how.durability);
  }

  #warn(text: string): void {
    this.warnings.push(text);
    this.#deps.logger?.warn(text, { file: this.#file });
  }

  /** A final line that is a whole record but lost its newline just gets the newline. */
  async #recoverTail(tail: Buffer): Promise<void> {
    const verdict: ReturnType<typeof judgeLine> =
      tail.length <= MAX_LINE_BYTES
        ? judgeLine(tail, this.#durableHead)
        : { ok: false, reason: `${tail.length} bytes without a newline` };
    if (!verdict.ok) {
      await this.#recover(tail.length, sha256Hex(tail), true, verdict.reason);
      return;
    }
    await this.#writer.writeNow(NEWLINE);
    this.#tip = this.#durableHead = { seq: verdict.record.seq, hash: verdict.record.hash };
    this.#warn(`the last record (seq ${verdict.record.seq}) had no trailing newline; added one`);
  }

  async #recover(
    bytes: number,
    sha256: string,
    newlineFirst: boolean,
    reason: string,
  ): Promise<void> {
    const after = this.#durableHead.seq;
    const rec = await this.#enqueue(
      'recovery',
      {
        torn: { bytes, sha256 },
        note: `${bytes} byte(s) after seq ${after} did not continue the chain (${reason}); left in place, not records`,
      },
      { internal: true, newlineFirst },
    );
    this.#warn(
      `torn tail of ${bytes} byte(s) after seq ${after} in ${this.#file} (sha256 ${sha256}); left in place and recorded as recovery seq ${rec.seq}`,
    );
  }
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

/** Reads up to `size` bytes (a device such as /dev/full reports 0) through the verifier. */
async function verifyHandle(
  handle: AuditFileHandle,
  size: number,
  checkpoint: ChainHead | undefined,
): Promise<ChainResult> {
  const verifier = new ChainVerifier(checkpoint);
  const buf = Buffer.alloc(READ_CHUNK);
  let pos = 0;
  while (pos < size) {
    const { bytesRead } = await handle.read(buf, 0, Math.min(READ_CHUNK, size - pos), pos);
    if (bytesRead === 0) break;
    verifier.push(buf.subarray(0, bytesRead));
    pos += bytesRead;
  }
  return verifier.finish();
}

function corrupt(file: string, seq: number, reason: string): AuditError {
  return new AuditError(
    'corrupt',
    `${file} does not verify at seq ${seq}: ${reason}. The broker will not start on it; run \`broker audit verify\` and compare with a backup`,
    { seq },
  );
}
