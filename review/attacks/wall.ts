/**
 * Attacks on the wall (broker/wall.ts) from angles the unit tests do not take: byte
 * limits hit exactly at multi-byte boundaries, NFC that grows a name past a limit,
 * long combining runs, compatibility spellings of reserved names, surrogates split by
 * a separator, and grant lists that are hostile in ways a store could never produce.
 * The display cases check that what the wall lets through is still shown to the owner
 * without anything hidden (broker/approval/format.ts).
 */
import { renderRequest } from '../../broker/approval/request-message.js';
import type { GrantView, RequestRecord } from '../../broker/base/domain.js';
import { canonicalPath, decide, type WallDecision } from '../../broker/wall.js';
import type { Case, Group } from '../runner.js';

const NOW = Date.UTC(2025, 0, 2, 12, 0, 0);
const H = 3_600_000;
const open = { discovery: true };
const closed = { discovery: false };

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');
const pathVerdict = (input: unknown): string => (canonicalPath(input).ok ? 'allowed' : 'refused');
const decision = (d: WallDecision): string => (d.ok ? 'allowed' : d.code);

function grant(path: string, extra: Partial<Record<keyof GrantView, unknown>> = {}): GrantView {
  return {
    id: 1,
    requestId: 1,
    instance: 'personal',
    path,
    mode: 'write',
    expiresAt: NOW + H,
    ...extra,
  } as GrantView;
}

/** A fixture must have exactly the size it claims, or the case proves nothing. */
function sized(text: string, want: number): string {
  const got = bytes(text);
  if (got !== want) throw new Error(`fixture is ${got} bytes, not ${want}`);
  return text;
}

/** The plain text of the request message the owner sees. */
function shownRequest(path: string, reason = 'review'): string {
  const request: RequestRecord = {
    id: 7,
    instance: 'personal',
    reason,
    state: 'pending',
    createdAt: NOW,
    decidedAt: null,
    decidedBy: null,
    items: [{ n: 1, kind: 'files', path, mode: 'read', grant: null }],
  };
  return renderRequest(request, { expiresIn: H }).plain;
}

/** What the owner sees for an item with this path (its line of the request message). */
function shownPath(path: string): string {
  return shownRequest(path).split('\n')[3] ?? '';
}

const EMOJI = '\u{1F600}'; // 4 UTF-8 bytes, 2 UTF-16 units
const CJK = '\u6F22'; // 漢, 3 bytes
const TWO = '\u00E9'; // é, 2 bytes
const HEBREW_FB2C = '\uFB2C'; // NFC → U+05E9 U+05BC U+05C1: 3 bytes typed, 6 sent

function lengthCases(): Case[] {
  const maxEmojiComponent = EMOJI.repeat(55);
  // 13 components of 220 bytes + 12 slashes = 2872; "/" + 31 emoji + "abc" = 128 → 3000.
  const path3000 = `${Array(13).fill(maxEmojiComponent).join('/')}/${EMOJI.repeat(31)}abc`;
  return [
    {
      name: 'component of 73 CJK characters + 1 ASCII = exactly 220 UTF-8 bytes',
      expect: 'allowed',
      run: () => pathVerdict(sized(`${CJK.repeat(73)}a`, 220)),
    },
    {
      name: 'component of 74 CJK characters = 222 bytes (only 74 characters)',
      expect: 'refused',
      run: () => pathVerdict(sized(CJK.repeat(74), 222)),
    },
    {
      name: 'component of 55 emoji = 220 bytes (110 UTF-16 units)',
      expect: 'allowed',
      run: () => pathVerdict(sized(maxEmojiComponent, 220)),
    },
    {
      name: 'component of 55 emoji + "a" = 221 bytes',
      expect: 'refused',
      run: () => pathVerdict(sized(`${maxEmojiComponent}a`, 221)),
    },
    {
      name: 'component of 109 two-byte letters + 2 ASCII = 220 bytes; +1 more = 221',
      expect: 'allowed/refused',
      run: () =>
        `${pathVerdict(sized(`${TWO.repeat(109)}ab`, 220))}/${pathVerdict(sized(`${TWO.repeat(109)}abc`, 221))}`,
    },
    {
      name: 'path of exactly 3000 bytes built from 4-byte characters',
      expect: 'allowed',
      run: () => pathVerdict(sized(path3000, 3000)),
    },
    {
      name: 'the same path + 1 byte (3001)',
      expect: 'refused',
      run: () => pathVerdict(sized(`${path3000}d`, 3001)),
    },
    {
      name: 'NFC expansion: 36 × U+FB2C typed as 108 bytes, sent as 216',
      expect: 'allowed',
      run: () => {
        const r = canonicalPath(HEBREW_FB2C.repeat(36));
        return r.ok && bytes(r.path) === 216 ? 'allowed' : r.ok ? 'allowed, wrong size' : 'refused';
      },
    },
    {
      name: 'NFC expansion: 37 × U+FB2C typed as 111 bytes grows to 222 bytes after NFC',
      expect: 'refused',
      run: () => pathVerdict(sized(HEBREW_FB2C.repeat(37), 111)),
    },
    {
      name: 'a 1525-byte path whose NFC form grows past 3000 bytes',
      expect: 'refused',
      run: () => pathVerdict(sized(Array(14).fill(HEBREW_FB2C.repeat(36)).join('/'), 1525)),
    },
    {
      name: 'inputs just under the 12 000-unit bound (11 999 marks, 5 999 "a"+mark, 3 999 jamo triples) are refused in < 50 ms each (best of 3)',
      expect: 'refused fast',
      run: () => {
        const inputs = [
          `a${'\u0301'.repeat(11_998)}`,
          'a\u0301'.repeat(5_999),
          '\u1100\u1161\u11A8'.repeat(3_999),
        ];
        pathVerdict(inputs[0]); // warm-up: the Unicode property patterns compile on first use
        let worst = 0;
        const verdicts = new Set<string>();
        for (const input of inputs) {
          let best = Infinity;
          for (let i = 0; i < 3; i += 1) {
            const t0 = performance.now();
            verdicts.add(pathVerdict(input));
            best = Math.min(best, performance.now() - t0);
          }
          worst = Math.max(worst, best);
        }
        return `${[...verdicts].join('+')} ${worst < 50 ? 'fast' : `slow (${worst.toFixed(1)} ms)`}`;
      },
    },
    {
      name: '12 001 UTF-16 units of combining marks (NFC never run on it)',
      expect: 'refused',
      run: () => pathVerdict(`${'\u0301'.repeat(12_001)}`),
    },
    {
      name: '"a" + 72 combining accents: allowed (Contract), shown with at most 3 marks in a row',
      expect: 'allowed, bounded on display',
      run: () => {
        const path = `a${'\u0301'.repeat(72)}`;
        const shown = shownPath(path);
        const run = /\p{M}{4,}/u.test(shown) ? 'unbounded' : 'bounded';
        return `${pathVerdict(path)}, ${run} on display`;
      },
    },
  ];
}

function scriptCases(): Case[] {
  const nfkc = (name: string, input: string): Case => ({
    name,
    expect: 'refused',
    run: () => pathVerdict(input),
  });
  return [
    nfkc('first component "oc" + U+017F LONG S ("ocſ" folds to "ocs")', 'oc\u017F/x'),
    nfkc(
      'first component "ＵＰＬＯＡＤＳ" (fullwidth, NFKC "UPLOADS")',
      '\uFF35\uFF30\uFF2C\uFF2F\uFF21\uFF24\uFF33/x',
    ),
    nfkc('".htacceſſ" with long s (NFKC ".htaccess")', 'a/.htacce\u017F\u017F'),
    nfkc('"index.ᴾᴴᴾ" with modifier capitals (NFKC "index.PHP")', 'index.\u1D3E\u1D34\u1D3E/x'),
    nfkc('"report" + U+2024 ONE DOT LEADER + "part" (NFKC ".part")', 'a/report\u2024part'),
    nfkc('a component that is U+2025 TWO DOT LEADER (NFKC "..")', 'a/\u2025/b'),
    nfkc('"c℅o" (U+2105, NFKC "c/o": a hidden separator)', 'a/c\u2105o'),
    nfkc('a name ending in U+FE52 SMALL FULL STOP (a trailing dot after NFKC)', 'a/name\uFE52'),
    nfkc('U+3164 HANGUL FILLER as a whole component (invisible)', 'a/\u3164/b'),
    nfkc('U+180E MONGOLIAN VOWEL SEPARATOR inside a name', 'a/na\u180Eme'),
    nfkc('U+034F COMBINING GRAPHEME JOINER after a letter', 'a/e\u034F'),
    nfkc('a tag character U+E0041 after a name', 'a/name\u{E0041}'),
    nfkc('a surrogate pair split by "/" ("\\uD83D/\\uDE00")', 'a\uD83D/\uDE00b'),
    nfkc('two high surrogates in a row', 'a\uD83D\uD83Db'),
    nfkc('U+10FFFF (a noncharacter, as a valid surrogate pair)', 'a/\u{10FFFF}'),
    nfkc('"%%32%65": an escape hidden behind a literal "%"', 'a/%%32%65'),
    nfkc('a String object instead of a string', new String('Docs') as unknown as string),
    {
      name: 'an object whose toString() is "Docs"',
      expect: 'refused',
      run: () => pathVerdict({ toString: () => 'Docs' }),
    },
    {
      name: '"%u002e%u002e" (IIS-style escape): a literal name, never decoded',
      expect: 'allowed as typed',
      run: () => {
        const r = canonicalPath('a/%u002e%u002e');
        return r.ok && r.path === 'a/%u002e%u002e' ? 'allowed as typed' : 'changed or refused';
      },
    },
    {
      name: 'Cyrillic "а" inside a Latin name ("pаyroll"): allowed, shown escaped to the owner',
      expect: 'allowed, shown as \\u{0430}',
      run: () => {
        const path = 'p\u0430yroll';
        const shown = shownPath(path);
        return `${pathVerdict(path)}, ${shown.includes('\\u{0430}') ? 'shown as \\u{0430}' : 'shown raw'}`;
      },
    },
    {
      name: 'U+2800 BRAILLE BLANK padding a name ("Docs⠀"): allowed, shown escaped',
      expect: 'allowed, shown escaped',
      run: () => {
        const shown = shownPath('Docs\u2800');
        return `${pathVerdict('Docs\u2800')}, ${shown.includes('\u2800') ? 'shown raw' : 'shown escaped'}`;
      },
    },
    {
      name: 'U+10FFFD private use: allowed, shown escaped',
      expect: 'allowed, shown escaped',
      run: () => {
        const shown = shownPath('a/\u{10FFFD}');
        return `${pathVerdict('a/\u{10FFFD}')}, ${shown.includes('\u{10FFFD}') ? 'shown raw' : 'shown escaped'}`;
      },
    },
  ];
}

function reasonCases(): Case[] {
  // The agent's reason passes the request tool's own filter (LF, non-Cf fillers and lone
  // surrogates get through it); the display must still show every character.
  const shownReason = (reason: string): string => shownRequest('Docs', reason).split('\n')[1] ?? '';
  return [
    {
      name: 'a reason with a line break and a forged "Approved request 7" line stays on one line',
      expect: 'one line, break shown escaped',
      run: () => {
        const plain = shownRequest('Docs', 'tidy up\nApproved request 7 until tomorrow');
        const forged = plain.split('\n').some((l) => l.startsWith('Approved'));
        return forged
          ? 'forged line shown'
          : plain.includes('\\u{000A}')
            ? 'one line, break shown escaped'
            : 'break dropped';
      },
    },
    {
      name: 'a reason with U+3164 HANGUL FILLER and a lone surrogate: both shown escaped',
      expect: 'both escaped',
      run: () => {
        const line = shownReason('a\u3164b\uD800c');
        return !line.includes('\u3164') && !/[\uD800-\uDFFF]/.test(line)
          ? 'both escaped'
          : `shown raw: ${line}`;
      },
    },
  ];
}

function grantCases(): Case[] {
  const read = (path: string, instance = 'personal') => ({ op: 'read', instance, path }) as const;
  return [
    {
      name: 'a grant whose expiresAt is Infinity covers nothing (fail closed on a non-finite expiry)',
      expect: 'no_grant',
      finding: 'F1',
      run: () =>
        decision(decide(read('Docs/a'), [grant('Docs', { expiresAt: Infinity })], closed, NOW)),
    },
    {
      name: 'a grant on "Docs∕x" (U+2215) never covers "Docs" or "Docs/x"',
      expect: 'no_grant/no_grant',
      run: () => {
        const g = [grant('Docs\u2215x')];
        return `${decision(decide(read('Docs'), g, closed, NOW))}/${decision(decide(read('Docs/x'), g, closed, NOW))}`;
      },
    },
    {
      name: 'a grant on "q" never covers "q" + COMBINING ACUTE (no precomposed form: the mark stays in the name)',
      expect: 'no_grant/no_grant',
      run: () => {
        const g = [grant('q')];
        return `${decision(decide(read('q\u0301'), g, closed, NOW))}/${decision(decide(read('q\u0301/x'), g, closed, NOW))}`;
      },
    },
    {
      name: 'a grant of mode "write " (trailing space) allows nothing',
      expect: 'no_grant',
      run: () => decision(decide(read('Docs'), [grant('Docs', { mode: 'write ' })], closed, NOW)),
    },
    {
      name: 'an instance name with a trailing NUL is another (unknown) instance',
      expect: 'unknown_instance',
      run: () => decision(decide(read('Docs', 'personal\u0000'), [grant('Docs')], undefined, NOW)),
    },
    {
      name: 'discovery list of "//" (the root spelled twice)',
      expect: 'invalid_path',
      run: () => decision(decide({ op: 'list', instance: 'personal', path: '//' }, [], open, NOW)),
    },
    {
      name: 'discovery list of "/\u00A0" (root + NBSP)',
      expect: 'invalid_path',
      run: () =>
        decision(decide({ op: 'list', instance: 'personal', path: '/\u00A0' }, [], open, NOW)),
    },
    {
      name: 'move from NFC to NFD spelling through different grants is still "same_path"',
      expect: 'same_path',
      run: () =>
        decision(
          decide(
            { op: 'move', instance: 'personal', from: 'caf\u00E9/a', to: 'cafe\u0301/a' },
            [grant('caf\u00E9')],
            closed,
            NOW,
          ),
        ),
    },
  ];
}

export const wallGroup: Group = {
  title: 'attacks: the wall (lengths, scripts, NFKC, surrogates, hostile grants, display)',
  build: () => ({ cases: [...lengthCases(), ...scriptCases(), ...reasonCases(), ...grantCases()] }),
};
