/**
 * The search term: refused, never repaired, when it is empty, too long, or holds what
 * could hide or split it; matched in NFC, ASCII letters without case, nothing else folded.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nameMatches, searchTerm } from '../../broker/base/search-term.js';

function refusedFor(input: unknown): string {
  const r = searchTerm(input);
  if (r.ok) throw new Error(`expected a refusal for ${JSON.stringify(input)}`);
  return r.reason;
}

describe('terms that are refused', () => {
  it.each([
    ['empty', '', /empty/],
    ['blank', '  \u00a0 ', /empty/],
    ['a slash (a name holds none)', 'Docs/report', /"\/"/],
    ['a NUL', 'a\u0000b', /control character.*: U\+0000/],
    ['a newline (splits a log line)', 'a\nb', /control character.*: U\+000A/],
    ['DEL', 'a\u007fb', /control character/],
    ['a C1 control', 'a\u0085b', /control character/],
    ['U+2028', 'a\u2028b', /line or paragraph separator/],
    ['a right-to-left override', 'txt.\u202egnp', /invisible or format character.*: U\+202E/],
    ['a zero-width space', 're\u200bport', /invisible/],
    ['a BOM', '\ufeffreport', /invisible/],
    ['a soft hyphen', 're\u00adport', /invisible/],
    ['a lone surrogate', 'a\ud800', /lone surrogate: U\+D800/],
    ['an unassigned code point', 'a\u{e0080}', /unassigned|invisible/],
    ['over 220 bytes', 'é'.repeat(111), /over 220 UTF-8 bytes/],
    ['a huge string (bounded before normalising)', 'x'.repeat(100_000), /over 220/],
  ])('%s', (_what, input, reason) => {
    expect(refusedFor(input)).toMatch(reason);
  });

  it('a refusal never echoes the term', () => {
    expect(refusedFor('evil\u202e\n')).not.toMatch(/evil|\u202e|\n/u);
  });

  it('refuses a non-string', () => {
    for (const input of [undefined, null, 42, ['a'], { toString: () => 'a' }])
      expect(refusedFor(input)).toMatch(/string/);
  });
});

describe('terms that are accepted', () => {
  it.each([
    ['plain', 'report', 'report'],
    ['wildcard characters (matched literally later)', '100%_a', '100%_a'],
    ['a backslash', 'a\\b', 'a\\b'],
    ['spaces inside and at the ends', ' final report ', ' final report '],
    ['NFD, normalised to NFC', 'Re\u0301sume\u0301', 'R\u00e9sum\u00e9'],
    ['exactly 220 bytes', 'é'.repeat(110), 'é'.repeat(110)],
    ['XML specials', '<a & "b">', '<a & "b">'],
  ])('%s', (_what, input, term) => {
    expect(searchTerm(input)).toEqual({ ok: true, term });
  });
});

describe('what a term matches', () => {
  it('a name containing it, ASCII letters without case', () => {
    expect(nameMatches('Report 2024.txt', 'report')).toBe(true);
    expect(nameMatches('REPORT.md', 'RePoRt')).toBe(true);
    expect(nameMatches('sub-report-final.TXT', 'report-f')).toBe(true);
    expect(nameMatches('repo.txt', 'report')).toBe(false);
  });

  it('accents count, and only ASCII letters ignore case', () => {
    expect(nameMatches('Réport.txt', 'report')).toBe(false);
    expect(nameMatches('Réport.txt', 'réport')).toBe(true);
    expect(nameMatches('Réport.txt', 'RÉPORT')).toBe(false);
    expect(nameMatches('été.txt', 'ete')).toBe(false);
  });

  it('NFD and NFC spellings meet in NFC, on either side', () => {
    const term = searchTerm('re\u0301port');
    expect(term).toEqual({ ok: true, term: 'r\u00e9port' });
    expect(term.ok && nameMatches('Re\u0301port.txt', term.term)).toBe(true);
    expect(term.ok && nameMatches('R\u00e9port.txt', term.term)).toBe(true);
  });

  it('property: a name always matches any piece of itself (in NFC)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
        fc.nat(),
        fc.nat(),
        (name, a, b) => {
          const nfc = name.normalize('NFC');
          const chars = Array.from(nfc);
          const start = a % chars.length;
          const piece = chars.slice(start, start + 1 + (b % (chars.length - start))).join('');
          expect(nameMatches(nfc, piece)).toBe(true);
        },
      ),
    );
  });
});
