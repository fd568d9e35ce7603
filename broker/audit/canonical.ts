/**
 * Canonical JSON and hashing for the audit chain (DESIGN §5, Contract).
 *
 * Canonical form: object keys sorted by UTF-16 code unit order (Array#sort), recursively;
 * no whitespace; strings and numbers exactly as `JSON.stringify` writes them. A stored
 * audit line must equal the canonical form of its own parsed value, so any reformatting
 * of a line (added spaces, reordered keys, escaped characters) is detected.
 */
import { createHash } from 'node:crypto';

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
    const rec = obj as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(rec).sort()) {
      const v = rec[key];
      if (v === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${write(v, stack)}`);
    }
    out = `{${parts.join(',')}}`;
  }
  stack.delete(obj);
  return out;
}

function fail(what: string): never {
  throw new TypeError(`canonicalJson: ${what}`);
}

/** Lower-case hex sha256 of a string (as UTF-8) or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
