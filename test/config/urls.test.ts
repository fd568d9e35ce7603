import { describe, expect, it } from 'vitest';
import { checkServiceUrl } from '../../broker/config.js';

describe('service URL rules', () => {
  it.each([
    'https://cloud.example.org',
    'https://cloud.example.org/nextcloud/',
    'https://[2001:db8::1]:8443',
  ])('accepts %s without warning', (url) => {
    expect(checkServiceUrl(url)).toEqual({ ok: true });
  });

  it.each(['http://localhost:8080', 'http://127.0.0.1', 'http://[::1]:9000/nc', 'http://127.1'])(
    'accepts loopback http %s with a warning',
    (url) => {
      const r = checkServiceUrl(url);
      expect(r.ok).toBe(true);
      expect(r.ok && r.warning).toMatch(/plain http/);
    },
  );

  describe('attack: credentials sent in clear text to a non-loopback host', () => {
    it.each([
      'http://cloud.example.org',
      'http://localhost.evil.example',
      'http://127.0.0.1.nip.io',
      'http://10.0.0.1',
      'http://[::2]',
    ])('refuses %s', (url) => {
      expect(checkServiceUrl(url)).toEqual({ ok: false, message: expect.stringMatching(/https/) });
    });
  });

  describe('attack: credentials, query or fragment smuggled into the URL', () => {
    it.each([
      ['https://alice:pw@cloud.example.org', /user name or password/],
      ['https://alice@cloud.example.org', /user name or password/],
      ['https://cloud.example.org/?x=1', /query/],
      ['https://cloud.example.org/?', /query/],
      ['https://cloud.example.org/#frag', /fragment/],
      ['https://cloud.example.org/#', /fragment/],
    ])('refuses %s', (url, why) => {
      const r = checkServiceUrl(url);
      expect(r.ok).toBe(false);
      expect(!r.ok && r.message).toMatch(why);
    });
  });

  it.each([
    'cloud.example.org',
    'ftp://cloud.example.org',
    'file:///etc/passwd',
    'javascript:alert(1)',
    '',
  ])('refuses non-http URL %j', (url) => {
    expect(checkServiceUrl(url).ok).toBe(false);
  });
});
