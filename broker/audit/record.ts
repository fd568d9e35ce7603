/**
 * One audit record: how it is built and how a stored line is judged (docs/contracts.md §4).
 * A line is `asciiJson(canonicalJson(record))`: the canonical form with every character
 * outside printable ASCII written as `\uXXXX`. `record.hash` is the hex sha256 of
 * `canonicalJson(record without hash)`, which includes `prev`: a hash of the values, so
 * the escaping changes no hash. Lines written before the escaping (raw UTF-8, the
 * canonical form itself) still verify.
 */
import { asciiJson } from '../base/text.js';
import { canonicalJson, canonicalJsonPlusMember, sha256Hex } from './canonical.js';
import type { JsonObject } from '../base/protocol.js';

export interface AuditRecord {
  seq: number;
  ts: string;
  prev: string;
  hash: string;
  event: string;
  [k: string]: unknown;
}

/** Field names the chain owns; callers may not set them. */
export const RESERVED_FIELDS: readonly string[] = ['seq', 'ts', 'prev', 'hash', 'event'];

/** Longest stored line we write (bytes, without the newline). Audit fields are small. */
export const MAX_LINE_BYTES = 1024 * 1024;

const HASH_RE = /^[0-9a-f]{64}$/;
const TS_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Builds the record and its line; throws TypeError for fields canonicalJson refuses. */
export function buildRecord(
  head: { seq: number; hash: string },
  ts: string,
  event: string,
  fields: JsonObject,
): { record: AuditRecord; line: string } {
  const body: JsonObject = {
    ...fields,
    seq: head.seq + 1,
    ts,
    prev: head.hash,
    event,
  };
  let hash = '';
  const { withMember } = canonicalJsonPlusMember(body, 'hash', (without) => {
    hash = sha256Hex(without);
    return hash;
  });
  // Security: on disk only printable ASCII, so no reader meets a line break, a terminal
  // control or a bidi override that an agent put in a path or a reason.
  return { record: { ...body, hash } as AuditRecord, line: asciiJson(withMember) };
}

export type LineVerdict = { ok: true; record: AuditRecord } | { ok: false; reason: string };

/**
 * Judges one stored line (without its newline) as the record that must follow `head`.
 * Security: the line must be byte-identical to one of the two renderings of its parsed
 * value, the ASCII form written now or the raw canonical form of older logs, so every
 * change of a byte either breaks the parse, matches neither rendering, or changes the
 * value and with it the hash.
 */
export function judgeLine(line: Buffer, head: { seq: number; hash: string }): LineVerdict {
  const expected = head.seq + 1;
  let value: unknown;
  try {
    value = JSON.parse(line.toString('utf8'));
  } catch {
    return { ok: false, reason: `line for seq ${expected} is not valid JSON` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, reason: `line for seq ${expected} is not a JSON object` };
  }
  const rec = value as JsonObject;
  let canonical: string;
  try {
    canonical = canonicalJson(rec);
  } catch {
    return { ok: false, reason: `line for seq ${expected} holds a value outside canonical JSON` };
  }
  if (!isStoredForm(line, canonical)) {
    return { ok: false, reason: `line for seq ${expected} is not in canonical form (edited)` };
  }
  const { hash, seq, prev, ts, event } = rec;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) {
    return { ok: false, reason: `line for seq ${expected} has no integer seq` };
  }
  if (seq !== expected) {
    return {
      ok: false,
      reason: `expected seq ${expected} but found seq ${seq} (a record was deleted, inserted or reordered)`,
    };
  }
  if (typeof prev !== 'string' || prev !== head.hash) {
    return { ok: false, reason: `seq ${seq}: prev does not match the hash of seq ${head.seq}` };
  }
  if (typeof ts !== 'string' || !TS_RE.test(ts)) {
    return { ok: false, reason: `seq ${seq}: ts is not an ISO-8601 UTC time` };
  }
  if (typeof event !== 'string' || event.length === 0) {
    return { ok: false, reason: `seq ${seq}: event is missing` };
  }
  if (typeof hash !== 'string' || !HASH_RE.test(hash)) {
    return { ok: false, reason: `seq ${seq}: hash is not 64 lower-case hex digits` };
  }
  const body: JsonObject = { ...rec };
  delete body.hash;
  if (sha256Hex(canonicalJson(body)) !== hash) {
    return { ok: false, reason: `seq ${seq}: hash does not match the record (edited)` };
  }
  return { ok: true, record: rec as AuditRecord };
}

/** The line is `canonical` in ASCII form, or (a log from before ASCII lines) as it is. */
function isStoredForm(line: Buffer, canonical: string): boolean {
  return (
    Buffer.from(asciiJson(canonical), 'utf8').equals(line) ||
    Buffer.from(canonical, 'utf8').equals(line)
  );
}

/** The `torn` field of a recovery record: the torn region it stands in for. */
export interface TornRegion {
  bytes: number;
  sha256: string;
}

/**
 * True when `line` is a recovery record whose `torn` names `region` (length and sha256).
 * Only the naming is checked here; the recovery line is then judged as a record.
 */
export function namesRegion(line: Buffer, region: TornRegion): boolean {
  let value: unknown;
  try {
    value = JSON.parse(line.toString('utf8'));
  } catch {
    return false;
  }
  if (typeof value !== 'object' || value === null) return false;
  const rec = value as JsonObject;
  if (rec.event !== 'recovery') return false;
  const torn = rec.torn;
  if (typeof torn !== 'object' || torn === null) return false;
  const t = torn as JsonObject;
  return region.bytes > 0 && t.bytes === region.bytes && t.sha256 === region.sha256;
}
