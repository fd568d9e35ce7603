/**
 * Removes configured secrets from any text before it leaves the broker (error messages,
 * log lines, audit fields).
 *
 * Security: a secret can reach a text in more spellings than its raw form: a server that
 * echoes the request's `Authorization: Basic …` header (base64 of `user:password`), a
 * URL or form body (percent-encoded, either hex case), a JSON-serialised log line (JSON
 * escapes), or base64 of a larger buffer (the secret at any byte alignment). Every such
 * form is replaced, longest first, so a shorter form never leaves part of a longer one
 * behind. Empty secrets are ignored (an empty form would match everywhere).
 *
 * An agent that wants a secret past the check can also spell it out of shape: in hex,
 * in another letter case, reversed, or with spaces between its characters. The secret
 * itself, its reverse and the hex of its bytes are therefore also matched loosely: in
 * any letter case and with any whitespace between any two characters (`looseForms`).
 * Not caught: other separators (`a-b-c`), other encodings (base32, rot13, per-byte
 * `%XX`, `\xXX`), a secret split across fields or calls, or anything encrypted.
 */
import type { JsonObject } from './protocol.js';

const MARK = '[redacted]';

/** Base64 pieces that encode only the secret's bytes, for each of the 3 byte alignments. */
function base64Cores(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let shift = 0; shift < 3; shift += 1) {
    const padded = Buffer.concat([Buffer.alloc(shift), bytes]);
    const encoded = padded.toString('base64').replace(/=+$/, '');
    // Characters before `start` mix in the alignment bytes; the last character may
    // mix in whatever follows the secret. Both are dropped, the middle is stable.
    const start = Math.ceil((shift * 8) / 6);
    const end = Math.floor(((shift + bytes.length) * 8) / 6);
    const core = encoded.slice(start, end);
    // A tiny core (a short secret) would match innocent text; the full encodings
    // below still cover the common cases for short secrets.
    if (core.length >= 4) cores.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return cores;
}

function lowerHex(encoded: string): string {
  return encoded.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
}

function safeEncode(encode: (s: string) => string, text: string): string | undefined {
  try {
    return encode(text);
  } catch {
    // encodeURIComponent throws on lone surrogates: such a form cannot appear.
    return undefined;
  }
}

/** Every spelling of one secret string that the scrubber removes. */
export function secretForms(secret: string): string[] {
  if (secret === '') return [];
  const bytes = Buffer.from(secret, 'utf8');
  const b64 = bytes.toString('base64');
  const forms = [
    secret,
    JSON.stringify(secret).slice(1, -1),
    b64,
    b64.replace(/=+$/, ''),
    bytes.toString('base64url'),
    ...base64Cores(bytes),
  ];
  for (const encode of [
    encodeURIComponent,
    encodeURI,
    (s: string) => new URLSearchParams({ s }).toString().slice(2),
  ]) {
    const encoded = safeEncode(encode, secret);
    if (encoded !== undefined) forms.push(encoded, lowerHex(encoded));
  }
  return forms;
}

/**
 * The spellings of one secret matched in any letter case and with any whitespace
 * between characters: the secret, its reverse (by code point) and the hex of its bytes.
 */
export function looseForms(secret: string): string[] {
  if (secret === '') return [];
  return [secret, [...secret].reverse().join(''), Buffer.from(secret, 'utf8').toString('hex')];
}

/**
 * A loose form as a regular expression source: its characters without whitespace, any
 * whitespace allowed between two of them. Each `\s*` stands before a character that is
 * not whitespace, so no two of them compete for the same input (no backtracking blowup).
 */
function looseSource(form: string): string {
  return [...form.replace(/\s+/gu, '')].map(escapeRegExp).join('\\s*');
}

/** The spellings of a `user:password` pair (HTTP Basic credentials, URL userinfo). */
function pairForms(user: string, password: string): string[] {
  if (password === '') return [];
  const forms = [...secretForms(`${user}:${password}`)];
  const userinfo = safeEncode(
    (p) => `${encodeURIComponent(user)}:${encodeURIComponent(p)}`,
    password,
  );
  if (userinfo !== undefined) forms.push(userinfo, lowerHex(userinfo));
  return forms;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Every spelling of every secret and pair, longest first, without the empty one. */
function allForms(
  secrets: readonly string[],
  pairs: readonly (readonly [user: string, password: string])[],
): string[] {
  const all = new Set<string>();
  for (const secret of secrets) for (const form of secretForms(secret)) all.add(form);
  for (const [user, password] of pairs) {
    for (const form of secretForms(password)) all.add(form);
    for (const form of pairForms(user, password)) all.add(form);
  }
  all.delete('');
  return [...all].sort((a, b) => b.length - a.length);
}

/** Every loose form of every secret and password, as one regular expression source. */
function allLooseSources(
  secrets: readonly string[],
  pairs: readonly (readonly [user: string, password: string])[],
): string[] {
  const all = new Set<string>();
  for (const secret of [...secrets, ...pairs.map(([, password]) => password)])
    for (const form of looseForms(secret)) all.add(looseSource(form));
  all.delete('');
  return [...all].sort((a, b) => b.length - a.length);
}

/** What one list of secrets gives: the scrubber, and the test for any of their forms. */
export interface SecretGuard {
  /** Replaces every form of every secret with `[redacted]` (see the module comment). */
  readonly scrub: (text: string) => string;
  /** Whether the text holds any form the scrubber would replace. */
  readonly holds: (text: string) => boolean;
}

/**
 * The scrubber and the secret test for a set of secrets and `[user, password]` pairs,
 * built from one list of forms so that what is refused and what is scrubbed never differ.
 * Both are pure and cheap enough to run on every log line and every argument.
 */
export function createSecretGuard(
  secrets: readonly string[],
  pairs: readonly (readonly [user: string, password: string])[] = [],
): SecretGuard {
  const forms = allForms(secrets, pairs);
  if (forms.length === 0) return { scrub: (text) => text, holds: () => false };
  // Longest first: alternation takes the first alternative that matches at a position.
  const source = forms.map(escapeRegExp).join('|');
  const pattern = new RegExp(source, 'g');
  const anywhere = new RegExp(source);
  // Security: hex, another letter case, reversed or space-split (see the module comment).
  const loose = allLooseSources(secrets, pairs).join('|');
  const loosePattern = new RegExp(loose, 'giu');
  const looseAnywhere = new RegExp(loose, 'iu');
  const contains = (text: string): boolean => anywhere.test(text) || looseAnywhere.test(text);
  const fallback = contains(MARK) ? '' : MARK;

  const scrub = (text: string): string => {
    let out = text;
    // Security: replacing can join the marker with neighbouring text into a new
    // occurrence (only for secrets made of marker characters); re-run a few times,
    // then give up on the text rather than let a secret through.
    for (let round = 0; round < 3; round += 1) {
      if (!contains(out)) return out;
      out = out.replace(pattern, MARK).replace(loosePattern, MARK);
    }
    return contains(out) ? fallback : out;
  };
  return { scrub, holds: contains };
}

/**
 * Build a scrubber for a set of secrets and `[user, password]` pairs. The returned
 * function is pure and cheap enough to run on every log line.
 */
export function createScrubber(
  secrets: readonly string[],
  pairs: readonly (readonly [user: string, password: string])[] = [],
): (text: string) => string {
  return createSecretGuard(secrets, pairs).scrub;
}

/** Deep-scrubs every string in an audit or envelope value. */
export function scrubDeep<T>(value: T, scrub: (text: string) => string): T {
  if (typeof value === 'string') return scrub(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => scrubDeep(v, scrub)) as T;
  if (typeof value === 'object' && value !== null) {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) out[k] = scrubDeep(v, scrub);
    return out as T;
  }
  return value;
}
