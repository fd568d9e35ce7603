/**
 * The one-time code of a pairing (`broker pair`): 10 characters of Crockford's base32
 * (50 random bits), shown as `xxxxx-xxxxx`, valid 10 minutes, used once. The owner types
 * `pair CODE` in the approval room from the device to pin; what they type is read
 * forgivingly (any case, spaces or dashes anywhere, `i`/`l` for `1`, `o` for `0`), since
 * a phone keyboard is no place for exactness, and it is still 50 bits.
 *
 * Security: the code only says which pairing a message answers; it pins nothing by
 * itself (desk.ts). Every session of the owner's account may read the message that
 * carries it, so it is no secret once typed; it is never posted, logged or audited.
 */
import { timingSafeEqual } from 'node:crypto';

/** Crockford's base32 alphabet, lower case: no i, l, o or u to misread. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const LENGTH = 10;
/** How long a code can be used, from when `broker pair` printed it. */
export const PAIR_CODE_VALID_MS = 10 * 60_000;
/** How long the owner has to confirm on the host once a device sent the code. */
export const PAIR_CONFIRM_MS = 10 * 60_000;

/** A new code, `xxxxx-xxxxx`: 50 bits of `randomBytes`. */
export function newPairCode(randomBytes: (size: number) => Uint8Array): string {
  // Each byte's low five bits are uniform, so each character is one of 32, evenly.
  const chars = [...randomBytes(LENGTH)].map((b) => ALPHABET[b & 31] ?? '0').join('');
  return `${chars.slice(0, 5)}-${chars.slice(5)}`;
}

/** The canonical form of a typed code (`xxxxxxxxxx`), or undefined when it cannot be one. */
export function canonicalPairCode(typed: string): string | undefined {
  const chars = typed.toLowerCase().replace(/[\s-]/g, '').replace(/[il]/g, '1').replace(/o/g, '0');
  if (chars.length !== LENGTH) return undefined;
  return [...chars].every((c) => ALPHABET.includes(c)) ? chars : undefined;
}

/** Whether a typed code is `code` (constant time: nothing leaks how much matched). */
export function isPairCode(typed: string, code: string): boolean {
  const a = canonicalPairCode(typed);
  const b = canonicalPairCode(code);
  if (a === undefined || b === undefined) return false;
  return timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

// `pair` and one argument (which may hold a space or a dash): plain ASCII, one line.
const PAIR_MESSAGE = /^[ \t]*pair[ \t]+([\x21-\x7e][\x20-\x7e]{0,40}?)[ \t]*$/i;

/** The code a `pair CODE` message carries (as typed), or undefined for any other text. */
export function pairMessageCode(body: string): string | undefined {
  return PAIR_MESSAGE.exec(body)?.[1];
}

/** An ed25519 key as Element shows a "Session key": groups of four. */
export function groupedKey(ed25519: string): string {
  return (ed25519.match(/.{1,4}/g) ?? []).join(' ');
}
