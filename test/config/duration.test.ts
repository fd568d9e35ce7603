import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  formatDuration,
  parseDuration,
  tryParseDuration,
} from '../../broker/config.js';

describe('parseDuration', () => {
  it.each([
    ['45s', 45_000],
    ['30m', 1_800_000],
    ['12h', 43_200_000],
    ['7d', 604_800_000],
    ['1s', 1_000],
    ['90m', 5_400_000],
  ])('%s → %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    '',
    '0s',
    '0h',
    '00h',
    '07d',
    '12',
    '12 h',
    ' 12h',
    '12h ',
    '12H',
    '1.5h',
    '-3d',
    '+3d',
    '1w',
    '1y',
    '1ms',
    '12hh',
    'h',
    '1e3s',
    '0x10s',
    '99999999999d',
    '１２h',
  ])('refuses %j, naming the key', (text) => {
    expect(tryParseDuration(text)).toBeUndefined();
    expect(() => parseDuration(text, 'lifecycle.max_grant')).toThrow(ConfigError);
    expect(() => parseDuration(text, 'lifecycle.max_grant')).toThrow(/^lifecycle\.max_grant: /);
  });

  it('refuses non-strings', () => {
    for (const v of [12, null, undefined, {}, ['12h']]) expect(tryParseDuration(v)).toBeUndefined();
  });

  it('property: every accepted text round-trips through formatDuration', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.constantFrom('s', 'm', 'h', 'd'),
        (n, u) => {
          const ms = parseDuration(`${n}${u}`);
          expect(ms).toBeGreaterThan(0);
          expect(parseDuration(formatDuration(ms))).toBe(ms);
        },
      ),
    );
  });

  it('property: any text outside the grammar is refused', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const ok = /^[1-9][0-9]*[smhd]$/.test(s);
        if (!ok) expect(tryParseDuration(s)).toBeUndefined();
      }),
    );
  });

  it('formats odd values in ms', () => {
    expect(formatDuration(1500)).toBe('1500ms');
    expect(formatDuration(86_400_000)).toBe('1d');
  });
});
