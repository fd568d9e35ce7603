/**
 * canonicalPath: each suite is named after the attack it stops. Inputs are written
 * with escapes so that every invisible character in them is visible in review.
 */
import { describe, expect, it } from 'vitest';
import { canonicalPath } from '../../broker/wall.js';
import { escapeForReason } from '../../broker/base/text.js';
import { WALL_MAX_COMPONENT_BYTES, WALL_MAX_PATH_BYTES } from '../../broker/base/limits.js';

function accepted(input: unknown): string {
  const result = canonicalPath(input);
  if (!result.ok)
    throw new Error(`expected ${JSON.stringify(input)} to be accepted: ${result.reason}`);
  return result.path;
}

function refusal(input: unknown): string {
  const result = canonicalPath(input);
  if (result.ok)
    throw new Error(
      `expected ${JSON.stringify(input)} to be refused, got ${JSON.stringify(result.path)}`,
    );
  return result.reason;
}

const utf8 = (s: string): number => Buffer.byteLength(s, 'utf8');

describe('ordinary paths', () => {
  it('drops one leading slash and keeps everything else as given', () => {
    expect(accepted('Docs/report.pdf')).toBe('Docs/report.pdf');
    expect(accepted('/Docs/report.pdf')).toBe('Docs/report.pdf');
    expect(accepted('Docs')).toBe('Docs');
  });

  it('accepts names with inner spaces, dots, percent signs, and non-Latin scripts', () => {
    for (const p of [
      'My Docs/Q3 report v2.final.pdf',
      '.hidden/..x/x..y/.config',
      '100%/50% off/%/%zz/%2',
      'Документы/отчёт',
      '書類/報告書',
      'Fotos 📷/½ cup',
      'café/naïve',
      'a-b_c (1)/[x]{y}',
    ]) {
      expect(accepted(p)).toBe(p);
    }
  });

  it('refuses what is not a non-empty string', () => {
    for (const v of [undefined, null, 42, true, ['Docs'], { path: 'Docs' }, Symbol('x'), 1n]) {
      expect(refusal(v)).toMatch(/must be a string/);
    }
    expect(refusal('')).toMatch(/empty/);
    expect(refusal('/')).toMatch(/instance root/);
  });
});

describe('traversal', () => {
  it.each([
    '..',
    '.',
    '../etc/passwd',
    'Docs/..',
    'Docs/../Secret',
    './Docs',
    'Docs/.',
    'Docs/./x',
    '/..',
    '/../Docs',
  ])('refuses dot segments: %j', (p) => {
    expect(refusal(p)).toMatch(/traversal/);
  });

  it.each(['//Docs', 'Docs//x', 'Docs/', '/Docs/', 'Docs/x/', '///'])(
    'refuses empty components and trailing slashes: %j',
    (p) => {
      expect(refusal(p)).toMatch(/empty component/);
    },
  );

  it.each(['Docs\\..\\Secret', '\\Docs', 'Docs\\x', '..\\x'])('refuses backslashes: %j', (p) => {
    expect(refusal(p)).toMatch(/backslash/);
  });

  it('treats dots inside a name as part of the name', () => {
    expect(accepted('Docs/..x')).toBe('Docs/..x');
    expect(accepted('Docs/x..y')).toBe('Docs/x..y');
  });
});

describe('percent encodings', () => {
  it.each([
    'Docs%2FSecret',
    'Docs%2fSecret',
    '%2E%2E/Secret',
    '%2e%2e',
    'Docs/%00',
    'Docs%5CSecret',
    'Docs/%252F',
    'caf%C3%A9',
    'x%fF',
  ])('refuses %% followed by two hex digits: %j', (p) => {
    const reason = refusal(p);
    expect(reason).toMatch(/percent-escape/);
    expect(reason).toMatch(/"%[0-9A-Fa-f]{2}"/);
  });

  it('never decodes: a lone percent sign stays a literal character', () => {
    expect(accepted('100%')).toBe('100%');
    expect(accepted('%g0/%0g/% 20')).toBe('%g0/%0g/% 20');
  });
});

describe('NUL and control characters', () => {
  const controls = [
    '\u0000',
    '\u0001',
    '\u001f',
    '\t',
    '\n',
    '\r',
    '\u000b',
    '\u000c',
    '\u001b',
    '\u007f',
    '\u0080',
    '\u0085',
    '\u009f',
  ];
  it.each(controls.map((c) => [escapeForReason(c), c]))(
    'refuses %s at the start, middle and end',
    (_label, c) => {
      for (const p of [`${c}Docs`, `Docs${c}x`, `Docs/x${c}`, `Docs${c}/x`]) {
        expect(refusal(p)).toMatch(/control character/);
      }
    },
  );

  it('refuses line and paragraph separators U+2028 and U+2029', () => {
    expect(refusal('Docs\u2028x')).toMatch(/line or paragraph separator/);
    expect(refusal('Docs/\u2029')).toMatch(/line or paragraph separator/);
  });

  it('refuses lone surrogates, high or low, and reversed pairs', () => {
    for (const p of ['Docs\ud800', '\udc00Docs', 'a\udc00\ud800b', 'x/\udbff']) {
      expect(refusal(p)).toMatch(/lone surrogate/);
    }
    expect(accepted('x/\ud83d\ude00')).toBe('x/😀');
  });

  it('never echoes a raw control character in the reason', () => {
    const reason = refusal('Docs\u0000\u001b[31m\n');
    expect(reason).toContain('U+0000');
    expect(reason).not.toMatch(/[\p{Cc}\p{Cf}]/u);
  });
});

describe('Unicode NFD/NFKC', () => {
  it('returns the NFC form of decomposed input', () => {
    expect(accepted('Docs/cafe\u0301')).toBe('Docs/caf\u00e9');
    expect(accepted('/Docs/cafe\u0301')).toBe(accepted('Docs/caf\u00e9'));
    expect(accepted('\u1100\u1161\u11a8')).toBe('\uac01');
  });

  it('maps canonical singletons to their NFC characters', () => {
    expect(accepted('\u212b')).toBe('\u00c5'); // ANGSTROM SIGN -> Å
    expect(accepted('\u212aelvin')).toBe('Kelvin'); // KELVIN SIGN -> K
  });

  it('keeps compatibility characters as they are (NFC, not NFKC)', () => {
    expect(accepted('\uff24ocs')).toBe('\uff24ocs'); // FULLWIDTH D stays
    expect(accepted('\ufb01le')).toBe('\ufb01le'); // LATIN SMALL LIGATURE FI stays
  });

  it('a canonical path is already NFC', () => {
    const p = accepted('e\u0301/\u0041\u030a/\u1e0b\u0323');
    expect(p).toBe(p.normalize('NFC'));
    expect(p).not.toBe(p.normalize('NFD'));
  });
});

describe('confusable separators', () => {
  it.each([
    ['\u2215', 'DIVISION SLASH'],
    ['\u2044', 'FRACTION SLASH'],
    ['\u29f8', 'BIG SOLIDUS'],
    ['\uff0f', 'FULLWIDTH SOLIDUS'],
    ['\uff3c', 'FULLWIDTH REVERSE SOLIDUS'],
    ['\ufe68', 'SMALL REVERSE SOLIDUS'],
    ['\u2216', 'SET MINUS'],
    ['\u29f9', 'BIG REVERSE SOLIDUS'],
    ['\u2571', 'BOX DRAWINGS LIGHT DIAGONAL'],
    ['\u2024', 'ONE DOT LEADER (NFKC ".")'],
    ['\u2025', 'TWO DOT LEADER (NFKC "..")'],
    ['\uff0e', 'FULLWIDTH FULL STOP (NFKC ".")'],
    ['\ufe52', 'SMALL FULL STOP (NFKC ".")'],
    ['\u2100', 'ACCOUNT OF (NFKC "a/c")'],
    ['\u2105', 'CARE OF (NFKC "c/o")'],
  ])('refuses %s (%s) anywhere in a component', (c) => {
    for (const p of [`Docs${c}Secret`, `Docs/${c}`, `${c}/x`, `${c}${c}`]) {
      expect(refusal(p)).toMatch(/separator look-alike/);
    }
  });

  it('names the NFKC form in the reason', () => {
    expect(refusal('a\u2025b')).toContain('NFKC ".."');
  });

  it('accepts characters whose NFKC form only contains a look-alike, not a separator', () => {
    // ½ is "1⁄2" under NFKC: it renders as one glyph, never as a path separator.
    expect(accepted('\u00bd cup')).toBe('\u00bd cup');
  });
});

describe('bidi and zero-width', () => {
  it.each([
    ['\u200b', 'ZERO WIDTH SPACE'],
    ['\u200c', 'ZERO WIDTH NON-JOINER'],
    ['\u200d', 'ZERO WIDTH JOINER'],
    ['\u2060', 'WORD JOINER'],
    ['\ufeff', 'BOM'],
    ['\u00ad', 'SOFT HYPHEN'],
    ['\u200e', 'LEFT-TO-RIGHT MARK'],
    ['\u200f', 'RIGHT-TO-LEFT MARK'],
    ['\u061c', 'ARABIC LETTER MARK'],
    ['\u202a', 'LRE'],
    ['\u202b', 'RLE'],
    ['\u202c', 'PDF'],
    ['\u202d', 'LRO'],
    ['\u202e', 'RLO'],
    ['\u2066', 'LRI'],
    ['\u2067', 'RLI'],
    ['\u2068', 'FSI'],
    ['\u2069', 'PDI'],
    ['\ufe0f', 'VARIATION SELECTOR-16'],
    ['\ufe00', 'VARIATION SELECTOR-1'],
    ['\u{e0100}', 'VARIATION SELECTOR-17'],
    ['\u180e', 'MONGOLIAN VOWEL SEPARATOR'],
    ['\u034f', 'COMBINING GRAPHEME JOINER'],
    ['\u3164', 'HANGUL FILLER'],
    ['\u115f', 'HANGUL CHOSEONG FILLER'],
    ['\u{e0041}', 'TAG LATIN CAPITAL LETTER A'],
    ['\u{1d173}', 'MUSICAL SYMBOL BEGIN BEAM'],
  ])('refuses %j (%s)', (c) => {
    for (const p of [`Docs${c}`, `${c}Docs`, `Do${c}cs/x`, `x/${c}`]) {
      expect(refusal(p)).toMatch(/invisible or format character/);
    }
  });

  it('refuses the classic RLO filename trick and shows it escaped', () => {
    const reason = refusal('Docs/invoice\u202efdp.exe');
    expect(reason).toContain('U+202E');
    expect(reason).not.toContain('\u202e');
  });

  it('refuses unassigned code points and noncharacters', () => {
    for (const c of ['\u0378', '\ufffe', '\uffff', '\u{10ffff}', '\u{50000}']) {
      expect(refusal(`x${c}`)).toMatch(/unassigned/);
    }
  });
});

describe('padded names and trailing dots', () => {
  it.each(['Docs ', ' Docs', 'Docs/ x', 'Docs/x ', '\u00a0Docs', 'Docs\u3000', 'Docs\u2003/x'])(
    'refuses leading or trailing whitespace: %j',
    (p) => {
      expect(refusal(p)).toMatch(/leading or trailing whitespace/);
    },
  );

  it.each(['Docs.', 'Docs./x', 'x/y.', '...', 'x/...'])('refuses a trailing dot: %j', (p) => {
    expect(refusal(p)).toMatch(/ends with a dot/);
  });
});

describe('reserved namespaces in any case', () => {
  const namespaces = [
    'trashbin',
    'files_trashbin',
    'files_versions',
    'uploads',
    'remote.php',
    'public.php',
    'ocs',
    'index.php',
  ];
  const fullwidth = (s: string): string =>
    s.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));

  it.each(namespaces)('refuses %s as the first component in every spelling', (name) => {
    const spellings = [
      name,
      name.toUpperCase(),
      name[0]?.toUpperCase() + name.slice(1),
      fullwidth(name).replace('\uff0e', '.'),
      `/${name}`,
      `${name}/x`,
    ];
    for (const p of spellings) expect(refusal(p)).toMatch(/reserved Nextcloud namespace/);
  });

  it('catches compatibility and case-mapping spellings', () => {
    expect(refusal('upload\u017f')).toMatch(/namespace/); // LATIN SMALL LONG S -> s
    expect(refusal('\u0131ndex.php')).toMatch(/namespace/); // dotless ı upper-cases to I
    expect(refusal('\u2170ndex.php')).toMatch(/namespace/); // SMALL ROMAN NUMERAL ONE -> i
    expect(refusal('OC\u0053')).toMatch(/namespace/);
  });

  it('allows the same names deeper down and longer names at the top', () => {
    expect(accepted('Docs/trashbin')).toBe('Docs/trashbin');
    expect(accepted('Docs/remote.php/ocs')).toBe('Docs/remote.php/ocs');
    expect(accepted('trashbin2')).toBe('trashbin2');
    expect(accepted('ocs.txt/x')).toBe('ocs.txt/x');
  });

  it.each([
    '.htaccess',
    'x/.HTACCESS',
    'x/.HtAccess/y',
    'upload.part',
    'x/Y.PART',
    '.part',
    'a.filepart',
    'x/a.FilePart',
    'a.\uff50\uff41\uff52\uff54', // fullwidth "part"
  ])('refuses reserved names anywhere: %j', (p) => {
    expect(refusal(p)).toMatch(/reserved name/);
  });

  it('allows names that only resemble reserved names', () => {
    for (const p of ['htaccess', 'x/a.parts', 'part', 'a.part.txt', 'x.filepart2']) {
      expect(accepted(p)).toBe(p);
    }
  });
});

describe('length limits (3000 bytes path, 220 bytes component, multi-byte)', () => {
  /** A path of exactly `bytes` UTF-8 bytes built from ASCII components of ≤ 200 bytes. */
  function asciiPath(bytes: number): string {
    const parts: string[] = [];
    let left = bytes;
    while (left > 201) {
      parts.push('a'.repeat(200));
      left -= 201;
    }
    parts.push('b'.repeat(left));
    return parts.join('/');
  }

  it('accepts exactly 3000 bytes and refuses 3001', () => {
    expect(utf8(asciiPath(WALL_MAX_PATH_BYTES))).toBe(3000);
    expect(accepted(asciiPath(3000))).toBe(asciiPath(3000));
    expect(accepted(`/${asciiPath(3000)}`)).toBe(asciiPath(3000));
    expect(refusal(asciiPath(3001))).toMatch(/over 3000 UTF-8 bytes/);
  });

  it('accepts a 220-byte component and refuses 221, counting UTF-8 bytes', () => {
    expect(WALL_MAX_COMPONENT_BYTES).toBe(220);
    expect(accepted('a'.repeat(220))).toHaveLength(220);
    expect(refusal(`x/${'a'.repeat(221)}`)).toMatch(/over 220 UTF-8 bytes/);
    expect(accepted('\u00e9'.repeat(110))).toHaveLength(110); // 2 bytes each = 220
    expect(refusal('\u00e9'.repeat(111))).toMatch(/over 220/);
    expect(accepted('\u20ac'.repeat(73))).toHaveLength(73); // 3 bytes each = 219
    expect(refusal('\u20ac'.repeat(74))).toMatch(/over 220/);
    expect(accepted('😀'.repeat(55))).toHaveLength(110); // 4 bytes each = 220
    expect(refusal('😀'.repeat(56))).toMatch(/over 220/);
  });

  it('applies the limits to the NFC form, which is what is sent', () => {
    const nfd = 'e\u0301'.repeat(110); // 330 bytes as given, 220 bytes in NFC
    expect(utf8(nfd)).toBe(330);
    expect(accepted(nfd)).toBe('\u00e9'.repeat(110));
    const component = 'e\u0301'.repeat(100); // 200 bytes in NFC
    const path = [...Array<string>(14).fill(component), 'e\u0301'.repeat(93)].join('/');
    expect(utf8(path)).toBeGreaterThan(4000);
    expect(utf8(accepted(path))).toBe(3000);
    expect(refusal(`${path}x`)).toMatch(/over 3000/);
  });

  it('refuses huge input before normalising it', () => {
    expect(refusal('a/'.repeat(6001))).toMatch(/over 3000 UTF-8 bytes/);
    expect(refusal('\u00e9'.repeat(20_000))).toMatch(/over 3000 UTF-8 bytes/);
  });
});

describe('reasons', () => {
  it('are one printable line and truncate long echoes', () => {
    const reason = refusal(`${'\u00e9'.repeat(200)}/x`);
    expect(reason).not.toMatch(/[\n\r]/);
    expect(reason).toContain('…');
    expect(escapeForReason('a\u0301\u202e\n\\', 10)).toBe('a\\u{0301}\\u{202E}\\u{000A}\\u{005C}');
    expect(escapeForReason(7)).toBe('<number>');
    expect(escapeForReason('abc', 2)).toBe('ab…');
    expect(escapeForReason('ab', 2)).toBe('ab');
  });
});
