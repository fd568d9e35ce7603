/**
 * How a request target becomes a user path, in the two layers the real server has:
 * Apache (length limit, encoded slash/NUL, literal dot segments, merged slashes) and
 * Nextcloud (percent-decoding, name rules, NFC storage).
 */

export type ApacheResult =
  | { ok: true; segments: string[]; trailingSlash: boolean; query: URLSearchParams }
  | { ok: false; status: 400 | 403 | 404 };

/** Longest request path Apache maps (facts: "URL paths over ~4 KB: 403 from Apache"). */
export const MAX_URL_PATH = 4096;

/** Apache's view of the raw request target: segments still percent-encoded. */
export function apacheParse(rawTarget: string): ApacheResult {
  const q = rawTarget.indexOf('?');
  const rawPath = q === -1 ? rawTarget : rawTarget.slice(0, q);
  const query = new URLSearchParams(q === -1 ? '' : rawTarget.slice(q + 1));
  if (!rawPath.startsWith('/')) return { ok: false, status: 400 };
  if (Buffer.byteLength(rawPath) > MAX_URL_PATH) return { ok: false, status: 403 };
  if (/%(?![0-9a-fA-F]{2})/.test(rawPath)) return { ok: false, status: 400 };
  // AllowEncodedSlashes Off: %2F (and %00) in the path is a 404 before PHP runs.
  if (/%2f|%00/i.test(rawPath)) return { ok: false, status: 404 };
  const segments: string[] = [];
  for (const seg of rawPath.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') segments.pop();
    else segments.push(seg);
  }
  return { ok: true, segments, trailingSlash: rawPath.endsWith('/'), query };
}

/** PHP rawurldecode, then UTF-8; bytes that are not UTF-8 read as Latin-1 (`%FF` → ÿ). */
export function decodeSegment(seg: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < seg.length;) {
    if (seg[i] === '%' && /^[0-9a-fA-F]{2}$/.test(seg.slice(i + 1, i + 3))) {
      bytes.push(parseInt(seg.slice(i + 1, i + 3), 16));
      i += 3;
    } else {
      const cp = seg.codePointAt(i) ?? 0;
      const ch = String.fromCodePoint(cp);
      bytes.push(...Buffer.from(ch, 'utf8'));
      i += ch.length;
    }
  }
  const buf = Buffer.from(bytes);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    return buf.toString('latin1');
  }
}

/**
 * Sabre's href encoding: everything but `A-Za-z0-9_-.~()/:@` as lowercase `%xx`
 * (so `+` is `%2b`, `:` stays).
 */
export function encodeHrefSegment(name: string): string {
  let out = '';
  for (const b of Buffer.from(name, 'utf8')) {
    const c = String.fromCharCode(b);
    out += b < 0x80 && /[A-Za-z0-9_\-.~():@]/.test(c) ? c : '%' + b.toString(16).padStart(2, '0');
  }
  return out;
}

/** Why a name is refused: the Sabre answer Nextcloud gives. */
export type NameProblem = SabreAnswer;

/** Longest name Nextcloud accepts (facts: names over 250 bytes: 400). */
export const MAX_NAME_BYTES = 250;

/**
 * Nextcloud's name rules for one decoded path component, as the given series answers
 * them (`.htaccess` differs: series.ts); MKCOL is the one method 34 answers differently.
 */
export function checkName(
  name: string,
  series: SeriesTraits,
  method?: string,
): NameProblem | undefined {
  // Security: a decoded `..` would leave the user's folder; Nextcloud answers 400.
  if (name === '..' || name === '.') {
    return { status: 400, exception: EX_INVALID_PATH, message: 'Path contains invalid segments' };
  }
  // eslint-disable-next-line no-control-regex
  if (/[\\\u0000-\u001f]/.test(name)) {
    return {
      status: 400,
      exception: EX_INVALID_PATH,
      message: 'File name contains at least one invalid character',
    };
  }
  if (Buffer.byteLength(name.normalize('NFC')) > MAX_NAME_BYTES) {
    return { status: 400, exception: EX_INVALID_PATH, message: 'File name is too long' };
  }
  if (name.toLowerCase() === '.htaccess') {
    return method === 'MKCOL' && series.htaccessMkcol !== undefined
      ? series.htaccessMkcol
      : series.htaccess;
  }
  return undefined;
}

/** A user path as the request spelled it and as it is stored. */
export interface UserPath {
  /** Decoded components as sent (not normalised): used to echo hrefs. */
  spelled: string[];
  /** Stored form: NFC, joined by `/`, no leading slash; '' is the user's root. */
  rel: string;
}

export function toUserPath(decoded: string[]): UserPath {
  return { spelled: decoded, rel: decoded.map((n) => n.normalize('NFC')).join('/') };
}

export function parentRel(rel: string): string {
  const i = rel.lastIndexOf('/');
  return i === -1 ? '' : rel.slice(0, i);
}

export function baseName(rel: string): string {
  return rel.slice(rel.lastIndexOf('/') + 1);
}

/** Canonical form of a helper-API path (`/a/b` or `a/b`) → stored rel. */
export function helperRel(path: string): string {
  // Security: test helpers must not reach outside root either.
  const parts = path.split('/').filter((s) => s !== '');
  if (parts.some((s) => s === '.' || s === '..' || s.includes('\\'))) {
    throw new Error(`fake nextcloud: bad helper path ${JSON.stringify(path)}`);
  }
  return parts.map((s) => s.normalize('NFC')).join('/');
}
import { EX_INVALID_PATH, type SabreAnswer, type SeriesTraits } from './series.js';
