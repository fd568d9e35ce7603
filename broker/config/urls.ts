/**
 * Rules for the service URLs in config (Nextcloud instances, the Matrix homeserver).
 *
 * Security: credentials travel to these hosts, so they must be https. Plain http is
 * accepted only on loopback, where nothing crosses a network (tests, a local demo,
 * a reverse proxy on the same machine), and then with a warning. A URL must not carry
 * credentials (they belong in their own secret keys, and would leak into logs), nor a
 * query or fragment (which would be silently dropped or mangled when paths are appended).
 */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

export type UrlCheck = { ok: true; warning?: string } | { ok: false; message: string };

export function checkServiceUrl(text: string): UrlCheck {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, message: 'must be a full URL like https://cloud.example.org' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { ok: false, message: 'must start with https://' };
  }
  if (url.username !== '' || url.password !== '') {
    return {
      ok: false,
      message: 'must not contain a user name or password; put those in their own keys',
    };
  }
  if (url.search !== '' || url.hash !== '' || text.includes('?') || text.includes('#')) {
    return { ok: false, message: 'must not contain a query (?…) or fragment (#…)' };
  }
  if (url.protocol === 'http:') {
    // The WHATWG parser has already normalised the host (e.g. 127.1 → 127.0.0.1).
    if (!LOOPBACK_HOSTS.has(url.hostname)) {
      return {
        ok: false,
        message: 'must use https:// (plain http is accepted only on localhost, 127.0.0.1 or [::1])',
      };
    }
    return {
      ok: true,
      warning: 'uses plain http; acceptable on loopback only, use https otherwise',
    };
  }
  return { ok: true };
}

/** Whether a listen address stays on this machine. */
export function isLoopbackListen(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
