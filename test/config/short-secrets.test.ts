/**
 * Attack: a 1-character app password or bot token. Every configured secret is scrubbed
 * from all output, so `doctor` (and every log line) then redacted each such letter
 * wherever it appeared. The config refuses a secret shorter than 16 characters, naming
 * the key and the next step, never the value.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MIN_SECRET_LENGTH } from '../../broker/config/resolve.js';
import { configError, ctx, parseRaw, withValue } from './helpers.js';

const KEYS: [key: string, fix: RegExp][] = [
  ['instances.personal.app_password', /Nextcloud app password/],
  ['matrix.bot_token', /bot's access token/],
];

describe('a 1-character app password or bot token', () => {
  it.each(KEYS)('%s "Q" is refused, naming the key and the next step', (key, fix) => {
    const error = configError(withValue(key, 'Q'));
    expect(error.issues).toEqual([
      { key, message: expect.stringContaining(`at least ${MIN_SECRET_LENGTH} characters`) },
    ]);
    expect(error.issues[0]?.message).toMatch(fix);
    expect(error.message).not.toMatch(/Q/);
  });

  it('the same from _file and _env names where the value came from', () => {
    const file = withValue(
      'instances.personal.app_password_file',
      'pw.txt',
      withValue('instances.personal.app_password', undefined),
    );
    const fromFile = configError(file, ctx({ readFile: () => 'short\n' }));
    expect(fromFile.issues[0]?.key).toBe('instances.personal.app_password_file');
    const env = withValue('matrix.bot_token_env', 'BOT', withValue('matrix.bot_token', undefined));
    const fromEnv = configError(env, ctx({ env: { BOT: 'syt_short' } }));
    expect(fromEnv.issues[0]?.key).toBe('matrix.bot_token_env');
    expect(fromEnv.message).not.toContain('syt_short');
  });
});

describe('property: a secret shorter than 16 characters is refused, 16 or more accepted', () => {
  it('for either key, any printable secret', () => {
    const secret = fc.string({
      unit: fc.constantFrom(...'aZ09-_~!+/='),
      minLength: 1,
      maxLength: 40,
    });
    fc.assert(
      fc.property(fc.constantFrom(...KEYS.map(([k]) => k)), secret, (key, value) => {
        const raw = withValue(key, value);
        if (value.length < MIN_SECRET_LENGTH) {
          const error = configError(raw);
          expect(error.issues.map((i) => i.key)).toEqual([key]);
          // The message is the same whatever the value: it can carry none of it.
          expect(error.message).toBe(configError(withValue(key, '-')).message);
        } else {
          expect(() => parseRaw(raw)).not.toThrow();
        }
      }),
      { numRuns: 200 },
    );
  });
});
