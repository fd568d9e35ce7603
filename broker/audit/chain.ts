/**
 * Incremental verification of the audit chain, shared by `verifyAudit` (offline, the CLI)
 * and `AuditLog.open` (on start). Pure: bytes in, verdict out.
 *
 * Accepted shapes: records with contiguous seq and matching prev/hash; and a torn region
 * (what a crash mid-write leaves: one or more lines that do not continue the chain)
 * followed immediately by a `recovery` record whose `torn` names the region's exact length
 * and sha256 (the region's lines joined by '\n'). Anything else is corruption, reported at
 * the seq where the next record should have been.
 */
import { createHash, type Hash } from 'node:crypto';
import { anchorText } from './anchor-text.js';
import { ZERO_HASH } from './canonical.js';
import { judgeLine, namesRegion, type AuditRecord } from './record.js';

export interface ChainHead {
  seq: number;
  hash: string;
}

/** A run of bytes that does not continue the chain, from `offset` to the end of the file. */
export interface UnrecoveredRegion {
  offset: number;
  bytes: number;
  sha256: string;
}

export type ChainResult =
  | {
      ok: true;
      records: number;
      head: ChainHead;
      /** Bytes after the last newline (empty when the file ends with one). */
      tail: Buffer;
      /** Torn regions already covered by recovery records. */
      recoveredRegions: number;
    }
  | {
      ok: false;
      seq: number;
      reason: string;
      /** The valid prefix. */
      head: ChainHead;
      records: number;
      /** The anchor the log contradicts, when that is what failed. */
      anchor?: ChainHead;
      /**
       * Set when everything from the first bad line to the end of the file fails to
       * continue the chain and no other check failed: the shape a crash leaves, which
       * `AuditLog.open` may recover. Absent for a checkpoint mismatch or a truncated tail.
       */
      region?: UnrecoveredRegion;
    };

interface Suspect {
  seq: number;
  reason: string;
  offset: number;
  bytes: number;
  hash: Hash;
}

export class ChainVerifier {
  #head: ChainHead = { seq: 0, hash: ZERO_HASH };
  #records = 0;
  #recovered = 0;
  #offset = 0;
  #carry: Buffer[] = [];
  #suspect: Suspect | undefined;
  #hard: { seq: number; reason: string; anchor?: ChainHead } | undefined;
  readonly #anchors: readonly ChainHead[];

  /**
   * @param checkpoint when given, the record at `checkpoint.seq` must carry its hash.
   * @param anchors heads the owner holds outside this host (posted to the room): the
   *   record at each `seq` must exist and carry that hash.
   * @param start the record the bytes pushed continue (a resuming log re-reads only what
   *   follows its durable head); default: the start of the log.
   * @param onRecord called with each record that continues the chain (a reader that also
   *   reads the events: verify's schema findings).
   */
  readonly #checkpoint?: ChainHead;
  readonly #onRecord?: (record: AuditRecord) => void;

  constructor(
    checkpoint?: ChainHead,
    anchors: readonly ChainHead[] = [],
    start?: ChainHead,
    onRecord?: (record: AuditRecord) => void,
  ) {
    this.#checkpoint = checkpoint;
    this.#onRecord = onRecord;
    this.#anchors = [...anchors].sort((a, b) => a.seq - b.seq);
    if (start !== undefined) this.#head = { ...start };
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (this.#hard === undefined) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      const line =
        this.#carry.length === 0 ? Buffer.from(piece) : Buffer.concat([...this.#carry, piece]);
      this.#carry = [];
      this.#line(line);
      this.#offset += line.length + 1;
      start = nl + 1;
    }
    if (this.#hard === undefined && start < chunk.length) {
      this.#carry.push(Buffer.from(chunk.subarray(start)));
    }
  }

  finish(): ChainResult {
    const base = { head: { ...this.#head }, records: this.#records };
    if (this.#hard !== undefined) return { ok: false, ...this.#hard, ...base };
    const cp = this.#checkpoint;
    const s = this.#suspect;
    // Security: the room saw this record, so a log that ends before it was cut, however
    // well its checkpoint agrees.
    const lost = this.#anchors.find((a) => a.seq > this.#head.seq);
    if (lost !== undefined) {
      const reason =
        s === undefined
          ? `the log's valid records end at seq ${this.#head.seq}, but anchor ${anchorText(lost)} names seq ${lost.seq}: records the approval room saw are gone (the tail was cut, and a checkpoint that agrees was rewritten)`
          : `${s.reason}; anchor ${anchorText(lost)} names a record past it`;
      return { ok: false, seq: this.#head.seq + 1, reason, anchor: lost, ...base };
    }
    if (cp !== undefined && cp.seq > this.#head.seq) {
      // Security: damage at or before the checkpointed head is never a crash artefact
      // (the checkpoint moves only after an fsync), so it is not recoverable.
      if (s !== undefined) return { ok: false, seq: s.seq, reason: s.reason, ...base };
      return {
        ok: false,
        seq: this.#head.seq + 1,
        reason: `the log's valid records end at seq ${this.#head.seq} but audit.checkpoint records seq ${cp.seq}: records ${this.#head.seq + 1}..${cp.seq} are missing or damaged (truncated tail)`,
        ...base,
      };
    }
    const tail = Buffer.concat(this.#carry);
    if (s !== undefined) {
      if (tail.length > 0) {
        s.hash.update('\n').update(tail);
        s.bytes += 1 + tail.length;
      }
      return {
        ok: false,
        seq: s.seq,
        reason: s.reason,
        ...base,
        region: { offset: s.offset, bytes: s.bytes, sha256: s.hash.digest('hex') },
      };
    }
    return { ok: true, ...base, tail, recoveredRegions: this.#recovered };
  }

  #line(line: Buffer): void {
    const s = this.#suspect;
    if (s === undefined) {
      const failure = this.#judge(line);
      if (failure !== undefined) {
        this.#suspect = {
          ...failure,
          offset: this.#offset,
          bytes: line.length,
          hash: createHash('sha256').update(line),
        };
      }
      return;
    }
    // Security: a region that breaks the chain is excused only by the very next record
    // naming its exact bytes, and that record must itself continue the chain.
    const region = { bytes: s.bytes, sha256: s.hash.copy().digest('hex') };
    if (namesRegion(line, region) && this.#judge(line, true) === undefined) {
      this.#suspect = undefined;
      this.#recovered += 1;
      return;
    }
    if (this.#hard !== undefined) return;
    s.hash.update('\n').update(line);
    s.bytes += 1 + line.length;
  }

  /** Advances the head over a valid record; returns why the line is not one. */
  #judge(line: Buffer, excusing = false): { seq: number; reason: string } | undefined {
    const verdict = judgeLine(line, this.#head);
    if (!verdict.ok) return { seq: this.#head.seq + 1, reason: verdict.reason };
    const { seq, hash } = verdict.record;
    // Security: a recovery record stands only right behind the region it names, so
    // removing the torn bytes it documents is noticed too.
    if (!excusing && verdict.record.event === 'recovery' && Object.hasOwn(verdict.record, 'torn')) {
      return {
        seq,
        reason: `recovery record seq ${seq} names torn bytes that are not in front of it (removed)`,
      };
    }
    // Security: a rewritten history, every later hash and the checkpoint recomputed,
    // still differs from what the room holds for this seq.
    const anchor = this.#anchors.find((a) => a.seq === seq && a.hash !== hash);
    if (anchor !== undefined) {
      this.#hard = {
        seq,
        reason: `record seq ${seq} has hash ${hash}, but anchor ${anchorText(anchor)} from the approval room names another: the history up to seq ${seq} was rewritten (hashes and checkpoint recomputed to match)`,
        anchor,
      };
      return undefined;
    }
    const cp = this.#checkpoint;
    if (cp !== undefined && cp.seq === seq && cp.hash !== hash) {
      this.#hard = {
        seq,
        reason: `audit.checkpoint names a different hash for seq ${seq} than the log holds (the log or the checkpoint was changed)`,
      };
      return undefined;
    }
    this.#head = { seq, hash };
    this.#records += 1;
    this.#onRecord?.(verdict.record);
    return undefined;
  }
}
