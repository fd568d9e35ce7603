/**
 * Canonical JSON and hashing for the audit chain (docs/contracts.md §4).
 *
 * Canonical form: object keys sorted by UTF-16 code unit order (Array#sort), recursively;
 * no whitespace; strings and numbers exactly as `JSON.stringify` writes them. A stored
 * audit line must equal the canonical form of its own parsed value, so any reformatting
 * of a line (added spaces, reordered keys, escaped characters) is detected.
 */
import { createHash } from 'node:crypto';
import type { JsonObject } from '../base/protocol.js';

/** `prev` of the first record. */
export const ZERO_HASH = '0'.repeat(64);

/**
 * Serialises plain JSON data canonically. Object properties whose value is `undefined`
 * are left out (as `JSON.stringify` does); anything JSON cannot carry faithfully
 * (`undefined` elsewhere, NaN, ±Infinity, bigint, functions, symbols, class instances
 * such as Date or Map, cycles) throws a TypeError instead of being silently changed.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

function write(value: unknown, stack: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} is not JSON`);
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new TypeError(`canonicalJson: a ${typeof value} is not JSON`);
  }
  const obj = value as object;
  if (stack.has(obj)) throw new TypeError('canonicalJson: cyclic structure');
  stack.add(obj);
  let out: string;
  if (Array.isArray(obj)) {
    out = `[${obj.map((item: unknown) => (item === undefined ? fail('undefined in an array') : write(item, stack))).join(',')}]`;
  } else {
    const proto = Object.getPrototypeOf(obj) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      throw new TypeError('canonicalJson: only plain objects and arrays are JSON');
    }
    out = `{${members(obj as JsonObject, stack)
      .map((m) => m.text)
      .join(',')}}`;
  }
  stack.delete(obj);
  return out;
}

interface Member {
  key: string;
  /** `"key":value`, canonical. */
  text: string;
}

function members(rec: JsonObject, stack: Set<object>): Member[] {
  const out: Member[] = [];
  for (const key of Object.keys(rec).sort()) {
    const v = rec[key];
    if (v === undefined) continue;
    out.push({ key, text: `${JSON.stringify(key)}:${write(v, stack)}` });
  }
  return out;
}

/**
 * Canonical JSON of a plain object, and of the same object with one more string member:
 * `{ without: canonicalJson(obj), withMember: canonicalJson({ ...obj, [key]: value }) }`,
 * computed with one serialisation (the audit line is its hashed body plus `hash`).
 * `obj` must not already have `key`.
 */
export function canonicalJsonPlusMember(
  obj: JsonObject,
  key: string,
  value: (without: string) => string,
): { without: string; withMember: string } {
  const proto = Object.getPrototypeOf(obj) as unknown;
  if (proto !== Object.prototype && proto !== null) {
    throw new TypeError('canonicalJson: only plain objects and arrays are JSON');
  }
  if (Object.hasOwn(obj, key)) throw new TypeError(`canonicalJson: "${key}" already present`);
  const parts = members(obj, new Set([obj]));
  const without = `{${parts.map((m) => m.text).join(',')}}`;
  const extra = { key, text: `${JSON.stringify(key)}:${JSON.stringify(value(without))}` };
  const at = parts.findIndex((m) => m.key > key);
  parts.splice(at < 0 ? parts.length : at, 0, extra);
  return { without, withMember: `{${parts.map((m) => m.text).join(',')}}` };
}

function fail(what: string): never {
  throw new TypeError(`canonicalJson: ${what}`);
}

/** Lower-case hex sha256 of a string (as UTF-8) or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
