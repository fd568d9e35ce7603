/**
 * Resuming the audit log after the disk filled up, without a restart.
 *
 * While the log is failed (failure.ts) every append is refused, so every operation is
 * refused (docs/contracts.md §4). When the failure was only a full disk, an append that
 * comes at least PROBE_DELAY_MS after the failure (doubling after each failed try, up to
 * MAX_PROBE_DELAY_MS) first tries to resume: it re-reads what follows the durable head
 * (a failed batch may have left whole records, whose appends were refused, or a torn
 * partial line), verifies it as the chain's continuation, and writes one `recovery`
 * record that says the log was down (since when, why, how many appends it refused,
 * which records it finds unconfirmed) and, when bytes were torn, names them exactly as
 * open() does. Only when that record is fsynced, and the checkpoint written after it,
 * does the log accept appends again; the chain verifies throughout.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../base/domain.js';
import { errorMessage } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { iso } from '../base/time.js';
import { type ChainHead, ChainVerifier } from './chain.js';
import { AuditError } from './errors.js';
import type { FailureState } from './failure.js';
import type { AuditFileHandle } from './fs.js';
import { buildRecord, judgeLine, type TornRegion } from './record.js';
import type { GroupCommitWriter } from './writer.js';

/** The first try comes this long after the failure; each failed try doubles it. */
export const PROBE_DELAY_MS = 1000;
export const MAX_PROBE_DELAY_MS = 30_000;
const READ_CHUNK = 64 * 1024;
const NEWLINE = Buffer.from('\n', 'utf8');

/** What follows the durable head, read back and judged. */
interface TailReading {
  /** The last whole record that continues the chain (the durable head, or later). */
  head: ChainHead;
  /** Whole records found after the durable head (written, but their appends refused). */
  adopted: number;
  /** The file's size when read. */
  size: number;
  /** Bytes after the last whole record that do not continue the chain. */
  torn: TornRegion | undefined;
  /** The file does not end with a newline: the recovery line starts with one. */
  newlineFirst: boolean;
}

export interface ResumeDeps {
  readonly now: Clock;
  readonly failure: FailureState;
  readonly writer: GroupCommitWriter;
  readonly handle: AuditFileHandle;
  readonly file: string;
  readonly logger: Logger | undefined;
  /** The durable head now. */
  readonly head: () => ChainHead;
  /** Makes `head` the durable head and the tip (the recovery record is fsynced). */
  readonly commit: (head: ChainHead) => void;
  /** Writes the checkpoint of `head`; rejects (failing the log) when it cannot. */
  readonly checkpoint: (head: ChainHead) => Promise<void>;
}

export class Resumer {
  /** The failure (its start) the delay below belongs to. */
  #outage: number | undefined;
  #delay = PROBE_DELAY_MS;
  #nextTry = 0;
  #running: Promise<void> | undefined;

  readonly #deps: ResumeDeps;

  constructor(deps: ResumeDeps) {
    this.#deps = deps;
  }

  /**
   * Resolves once the log accepts appends again (at once when it never failed); rejects
   * with the log's failure when it cannot resume, or it is not yet time to try.
   */
  ready(): Promise<void> {
    const { failure } = this.#deps;
    const since = failure.since;
    if (!failure.failed || since === undefined) return Promise.resolve();
    if (this.#outage !== since) {
      this.#outage = since;
      this.#delay = PROBE_DELAY_MS;
      this.#nextTry = since + PROBE_DELAY_MS;
    }
    // Security: only a full disk resumes, and at most one try per delay, so a flood of
    // calls on a full disk costs no more than one small write every few seconds.
    if (this.#running === undefined) {
      if (!failure.resumable || this.#deps.now() < this.#nextTry) {
        return Promise.reject(this.#refusal());
      }
      this.#running = this.#attempt(since).finally(() => {
        this.#running = undefined;
      });
    }
    // Every append waiting on a try that fails is refused (and counted) on its own.
    return this.#running.catch(() => Promise.reject(this.#refusal()));
  }

  /** Waits for a try in progress (close()). */
  async idle(): Promise<void> {
    await this.#running?.catch(() => undefined);
  }

  #refusal(): AuditError {
    const { failure } = this.#deps;
    failure.noteRefused();
    return failure.later() ?? new AuditError('write_failed', 'the audit log could not resume');
  }

  async #attempt(since: number): Promise<void> {
    const { failure, writer, logger } = this.#deps;
    const cause = failure.cause;
    const refusedAppends = failure.refused;
    try {
      await writer.idle();
      const tail = await this.#readTail();
      const fields = {
        outage: {
          since: iso(since),
          cause: cause ?? 'unknown',
          refused_appends: refusedAppends,
          ...(tail.adopted > 0
            ? { unconfirmed: { from: tail.head.seq - tail.adopted + 1, to: tail.head.seq } }
            : {}),
        },
        ...(tail.torn === undefined ? {} : { torn: tail.torn }),
        note: `the audit log could not be written (${cause ?? 'unknown'}) and refused ${refusedAppends} append(s), so no operation ran unrecorded; it resumed once a write succeeded${tail.adopted > 0 ? `; records ${tail.head.seq - tail.adopted + 1}..${tail.head.seq} reached the file but their appends were refused (their operations did not run)` : ''}${tail.torn === undefined ? '' : `; ${tail.torn.bytes} torn byte(s) before this record are left in place, not records`}`,
      };
      const built = buildRecord(tail.head, iso(this.#deps.now()), 'recovery', fields);
      const line = Buffer.from(built.line, 'utf8');
      const bytes = Buffer.concat(tail.newlineFirst ? [NEWLINE, line, NEWLINE] : [line, NEWLINE]);
      await writer.writeAfter(tail.size, bytes);
      const head = { seq: built.record.seq, hash: built.record.hash };
      this.#deps.commit(head);
      failure.clear();
      await this.#deps.checkpoint(head);
      logger?.warn('audit log resumed', { file: this.#deps.file, seq: head.seq, refusedAppends });
    } catch (err) {
      failure.failAgain(err);
      this.#delay = Math.min(this.#delay * 2, MAX_PROBE_DELAY_MS);
      this.#nextTry = this.#deps.now() + this.#delay;
      logger?.warn('audit log still cannot be written', { error: errorMessage(err) });
      throw err;
    }
  }

  /** Re-reads and judges everything after the durable head. */
  async #readTail(): Promise<TailReading> {
    const { handle, writer } = this.#deps;
    const from = writer.durableSize;
    const start = this.#deps.head();
    const { size } = await handle.stat();
    if (size < from) {
      throw new AuditError(
        'corrupt',
        `${this.#deps.file} is ${size} bytes, shorter than its ${from} durable bytes (truncated while failed); restart the broker, which re-verifies the log`,
      );
    }
    const verifier = new ChainVerifier(undefined, [], start);
    const buf = Buffer.alloc(READ_CHUNK);
    let last = -1;
    for (let pos = from; pos < size;) {
      const { bytesRead } = await handle.read(buf, 0, Math.min(READ_CHUNK, size - pos), pos);
      if (bytesRead === 0) break;
      last = buf[bytesRead - 1] as number;
      verifier.push(buf.subarray(0, bytesRead));
      pos += bytesRead;
    }
    const result = verifier.finish();
    const newlineFirst = size > from && last !== 0x0a;
    const adopted = (head: ChainHead): number => head.seq - start.seq;
    if (!result.ok) {
      if (result.region === undefined) throw new AuditError('corrupt', result.reason);
      const torn = { bytes: result.region.bytes, sha256: result.region.sha256 };
      return { head: result.head, adopted: adopted(result.head), size, torn, newlineFirst };
    }
    if (result.tail.length === 0) {
      return {
        head: result.head,
        adopted: adopted(result.head),
        size,
        torn: undefined,
        newlineFirst,
      };
    }
    // A whole record that lost only its newline continues the chain; anything else is torn.
    const verdict = judgeLine(result.tail, result.head);
    if (verdict.ok) {
      const head = { seq: verdict.record.seq, hash: verdict.record.hash };
      return { head, adopted: adopted(head), size, torn: undefined, newlineFirst };
    }
    const torn = {
      bytes: result.tail.length,
      sha256: createHash('sha256').update(result.tail).digest('hex'),
    };
    return { head: result.head, adopted: adopted(result.head), size, torn, newlineFirst };
  }
}
