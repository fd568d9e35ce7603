/**
 * A sweep over the code space: every character is refused or accepted inside a name
 * exactly as docs/contracts.md §1 says, checked against a restatement of the rules written here
 * independently of broker/wall.ts.
 */
import { describe, expect, it } from 'vitest';
import { canonicalPath } from '../../broker/wall.js';

/** The Contract's character rules, restated: true when a character is refused. */
function refusedByContract(ch: string): boolean {
  if (/[\p{Cc}\p{Cs}\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029\\]/u.test(ch)) return true;
  // Listed look-alikes (the Contract's seven plus the further solidus look-alikes).
  if (
    /[\u2215\u2044\u29F8\uFF0F\uFF3C\uFE68\u2216\u29F9\u2571\u2572\u27CB\u27CD\u244A\u2AFB\u2AFD\u1735]/u.test(
      ch,
    )
  ) {
    return true;
  }
  const compat = ch.normalize('NFKC');
  if (ch !== '/' && (compat.includes('/') || compat.includes('\\'))) return true;
  if (ch !== '.' && (compat === '.' || compat === '..')) return true;
  // Extension: unassigned code points and noncharacters (NFC of them is not stable).
  return /\p{Cn}/u.test(ch);
}

function* codePoints(): Generator<string> {
  const ranges: [number, number][] = [
    [0x0000, 0x2ffff], // BMP, SMP, SIP: every assigned script and symbol
    [0xe0000, 0xe0fff], // tags and variation selectors supplement
    [0xffff0, 0x10ffff], // ends of the private use planes and the last noncharacters
  ];
  for (const [from, to] of ranges) {
    for (let cp = from; cp <= to; cp += 1) yield String.fromCodePoint(cp);
  }
}

describe('every code point inside a name', () => {
  it('is refused exactly when the Contract refuses it', () => {
    const mismatches: string[] = [];
    for (const ch of codePoints()) {
      const result = canonicalPath(`a${ch}b`);
      // `/` splits the name into two valid components; `%` alone is a literal.
      if (result.ok === refusedByContract(ch)) {
        mismatches.push(`U+${(ch.codePointAt(0) as number).toString(16).toUpperCase()}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('NFC never hides a refused character: a character NFC changes has the same verdict as what it becomes', () => {
    for (const ch of codePoints()) {
      const nfc = ch.normalize('NFC');
      if (nfc === ch) continue;
      expect([...nfc].some(refusedByContract), ch).toBe(refusedByContract(ch));
    }
  });
});
