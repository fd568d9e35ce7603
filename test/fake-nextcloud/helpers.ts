/** Plain-HTTP helpers for testing the fake Nextcloud (no client library involved). */
import type { IncomingHttpHeaders } from 'node:http';
import type { FakeNextcloud } from '../../fakes/nextcloud.js';
import { raw } from '../../support/raw-http.js';

export function basic(user: string, password: string): string {
  return 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
}

/** URL of a user path given already-encoded components, e.g. davUrl(fake, 'a/b%20c.txt'). */
export function davUrl(fake: FakeNextcloud, encodedPath = ''): string {
  return `${fake.url}/remote.php/dav/files/${fake.user}/${encodedPath}`;
}

export interface DavInit {
  headers?: Record<string, string>;
  body?: string | Buffer;
  auth?: string | null;
}

/** fetch with the fake's credentials (override with `auth`, or `null` for none). */
export async function dav(
  fake: FakeNextcloud,
  method: string,
  encodedPath = '',
  init: DavInit = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  const auth = init.auth === undefined ? basic(fake.user, fake.password) : init.auth;
  if (auth !== null) headers.Authorization = auth;
  return fetch(davUrl(fake, encodedPath), {
    method,
    headers,
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A request with the target sent byte for byte (no URL normalisation, unlike fetch). */
export async function rawRequest(
  fake: FakeNextcloud,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawResponse> {
  const res = await raw(fake.url, {
    method,
    path: target,
    headers: { Authorization: basic(fake.user, fake.password), ...headers },
    ...(body === undefined ? {} : { body }),
    // Node refuses some raw bytes in a path unless told not to check.
    insecureHTTPParser: true,
  });
  return { status: res.status, headers: res.headers, body: res.text };
}

export const PROPFIND_BODY = `<?xml version="1.0"?>
<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">
  <d:prop>
    <d:getlastmodified/><d:getetag/><d:getcontentlength/><d:resourcetype/><d:displayname/>
    <oc:fileid/><oc:permissions/><nc:lock/><nc:lock-owner/><nc:lock-token/>
  </d:prop>
</d:propfind>`;

export const LOCKINFO = `<?xml version="1.0" encoding="utf-8"?>
<d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype><d:owner><d:href>broker</d:href></d:owner></d:lockinfo>`;

/** The `<d:response>` blocks of a multistatus, in order, with their href. */
export function responses(xml: string): { href: string; xml: string }[] {
  return [...xml.matchAll(/<d:response>([\s\S]*?)<\/d:response>/g)].map((m) => ({
    href: /<d:href>([^<]*)<\/d:href>/.exec(m[1] ?? '')?.[1] ?? '',
    xml: m[1] ?? '',
  }));
}

/** Property elements inside the propstat with the given status. */
export function propstat(responseXml: string, status: number): string {
  const blocks = [...responseXml.matchAll(/<d:propstat>([\s\S]*?)<\/d:propstat>/g)];
  return blocks.map((b) => b[1] ?? '').find((b) => b.includes(`HTTP/1.1 ${status} `)) ?? '';
}

export function sabreException(body: string): string | undefined {
  return /<s:exception>([^<]*)<\/s:exception>/.exec(body)?.[1];
}
