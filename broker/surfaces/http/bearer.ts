/**
 * Bearer-token authentication per surface.
 *
 * Allows: `Authorization: Bearer <token>` whose token equals this surface's token.
 * Denies: a missing or malformed header, a wrong token, the other surface's token, and
 * a token anywhere else (query string, body, cookie): those are never read. Every
 * denial gets the same 401 body, so a caller learns nothing about why.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { SurfaceName } from '../../base/call.js';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Constant-time token comparison.
 * Security: hashing both sides first gives equal-length buffers, so neither the compare
 * nor a length check leaks how much of the token (or its length) an attacker guessed.
 */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  const a = digest(presented ?? '');
  const b = digest(expected);
  return timingSafeEqual(a, b) && presented !== undefined;
}

/** The token of an `Authorization: Bearer …` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer ([\x21-\x7e]+)$/i.exec(header.trim());
  return match?.[1];
}

export type AuthFailure = 'missing' | 'mismatch';

/** What a token opens: an MCP surface, or the metrics endpoint. */
export type AuthRealm = SurfaceName | 'metrics';

export const UNAUTHORIZED_BODY = {
  status: 'refused',
  message: 'unauthorized: send Authorization: Bearer <token> for this surface',
} as const;

export function requireBearer(
  surface: AuthRealm,
  expected: string,
  onFailure: (surface: AuthRealm, reason: AuthFailure, remote: string | undefined) => void,
): RequestHandler {
  return (req, res, next) => {
    // Security: only the Authorization header is consulted; ?access_token= and the like
    // are ignored so tokens never travel in URLs (and so never reach logs or history).
    const token = bearerToken(req.headers.authorization);
    if (token === undefined || !tokenMatches(token, expected)) {
      onFailure(surface, token === undefined ? 'missing' : 'mismatch', req.socket.remoteAddress);
      res.status(401).set('WWW-Authenticate', 'Bearer').json(UNAUTHORIZED_BODY);
      return;
    }
    next();
  };
}
