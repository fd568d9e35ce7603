/**
 * Host header allow-list (DNS rebinding defence), checked before anything else.
 *
 * Allows: a request whose Host, without its port, equals one of `server.allowed_hosts`
 * (case-insensitive; IPv6 compared without brackets), and whose Origin, when present,
 * names an allowed host too. Denies everything else, a missing Host included.
 */
import type { RequestHandler } from 'express';

/** The host part of a Host header value, lower-case, IPv6 without brackets; null if malformed. */
export function hostOf(value: string): string | null {
  const text = value.trim().toLowerCase();
  if (text.length === 0 || text.length > 255) return null;
  let host: string;
  let rest: string;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return null;
    host = text.slice(1, close);
    rest = text.slice(close + 1);
    if (!/^[0-9a-f:.]+$/.test(host)) return null;
  } else {
    const colon = text.indexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    rest = colon < 0 ? '' : text.slice(colon);
    if (!/^[a-z0-9._-]+$/.test(host)) return null;
  }
  if (rest !== '' && !/^:[0-9]{1,5}$/.test(rest)) return null;
  return host;
}

function normalise(allowed: string): string {
  const text = allowed.trim().toLowerCase();
  return text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
}

/** Pure decision: may a request with these headers proceed? */
export function hostAllowed(
  host: string | undefined,
  origin: string | undefined,
  allowed: ReadonlySet<string>,
): boolean {
  if (host === undefined) return false;
  const h = hostOf(host);
  if (h === null || !allowed.has(h)) return false;
  if (origin === undefined) return true;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return false;
  }
  const o = hostOf(originHost);
  return o !== null && allowed.has(o);
}

export function allowedHostSet(allowed: readonly string[]): ReadonlySet<string> {
  return new Set(allowed.map(normalise));
}

/** How many `Host` lines a request carried (Node keeps only the first in `headers`). */
export function hostLineCount(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2)
    if (rawHeaders[i]?.toLowerCase() === 'host') count += 1;
  return count;
}

/**
 * Express adapter: 400 for a request whose authority is ambiguous (not exactly one Host
 * line, or an absolute-form target), 403 for a host that is not allowed.
 */
export function hostCheck(
  allowed: readonly string[],
  onRejected: (host: string | undefined) => void,
): RequestHandler {
  const set = allowedHostSet(allowed);
  return (req, res, next) => {
    const host = req.headers.host;
    // Security: RFC 9112 §3.2 — more than one Host line must be refused (a proxy in front
    // may route on another copy than the one we check); §3.2.2 — an absolute-form target
    // names the authority itself and Host is ignored, so the Host we check would not be
    // the one that counts. Origin servers only ever get origin-form targets ("/…").
    if (hostLineCount(req.rawHeaders) !== 1 || !req.url.startsWith('/')) {
      onRejected(host);
      res.status(400).json({
        status: 'refused',
        message: 'bad request: one Host header and an origin-form target',
      });
      return;
    }
    // Security: DNS rebinding — a page on evil.example resolving to 127.0.0.1 reaches us
    // with its own name in Host (and Origin); only the configured names are served.
    if (!hostAllowed(host, req.headers.origin, set)) {
      onRejected(host);
      res.status(403).json({ status: 'refused', message: 'host not allowed' });
      return;
    }
    next();
  };
}
