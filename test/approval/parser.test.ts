import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  parseCommand,
  renderCommand,
  HELP_HINT,
  type ParseResult,
} from '../../broker/approval/parser.js';
import { type Command } from '../../broker/approval/command.js';

const H = 3_600_000;

function accepted(text: string): Command {
  const r = parseCommand(text);
  if (r === null || !r.ok)
    throw new Error(`expected ${JSON.stringify(text)} to parse: ${JSON.stringify(r)}`);
  return r.command;
}

function refused(text: string): string {
  const r = parseCommand(text);
  if (r === null || r.ok)
    throw new Error(`expected ${JSON.stringify(text)} to be refused: ${JSON.stringify(r)}`);
  expect(r.reason.endsWith(HELP_HINT)).toBe(true);
  // What a shell's `broker VERB` says: the same problem, once, without the console's hint.
  expect(r.reason).toContain(r.problem);
  expect(r.problem).not.toContain(HELP_HINT);
  expect(r.problem.endsWith('.')).toBe(false);
  if (r.verb !== undefined) expect(r.problem.startsWith(`${r.verb}:`)).toBe(false);
  return r.reason;
}

describe('parseCommand: the accepted forms', () => {
  it.each<[string, Command]>([
    ['approve 3', { kind: 'approve', request: 3 }],
    ['approve 3 1,3', { kind: 'approve', request: 3, items: [1, 3] }],
    ['approve 3 8h', { kind: 'approve', request: 3, durationMs: 8 * H }],
    ['approve 3 1,3 8h', { kind: 'approve', request: 3, items: [1, 3], durationMs: 8 * H }],
    ['approve 12 2 30m', { kind: 'approve', request: 12, items: [2], durationMs: 30 * 60_000 }],
    ['approve 3 8', { kind: 'approve', request: 3, items: [8] }],
    ['approve 3 7d', { kind: 'approve', request: 3, durationMs: 7 * 24 * H }],
    ['approve 3 45s', { kind: 'approve', request: 3, durationMs: 45_000 }],
    ['deny 3', { kind: 'deny', request: 3 }],
    ['deny all', { kind: 'deny_all' }],
    ['show 3', { kind: 'show', request: 3 }],
    ['revoke 3', { kind: 'revoke', target: { request: 3 } }],
    ['revoke personal', { kind: 'revoke', target: { instance: 'personal' } }],
    ['revoke work_2-b', { kind: 'revoke', target: { instance: 'work_2-b' } }],
    ['revoke all', { kind: 'revoke', target: 'all' }],
    ['status', { kind: 'status' }],
    ['help', { kind: 'help' }],
    ['undo 42', { kind: 'undo', target: { seq: 42 }, dryRun: false }],
    ['undo 42 --dry-run', { kind: 'undo', target: { seq: 42 }, dryRun: true }],
    ['undo --request 3', { kind: 'undo', target: { request: 3 }, dryRun: false }],
    ['undo --request 3 --dry-run', { kind: 'undo', target: { request: 3 }, dryRun: true }],
    ['UNDO --REQUEST 3 --DRY-RUN', { kind: 'undo', target: { request: 3 }, dryRun: true }],
  ])('%j', (text, command) => {
    expect(accepted(text)).toEqual(command);
  });

  it('is case-insensitive and tolerates surrounding and repeated whitespace', () => {
    expect(accepted('  APPROVE 3 1,3 8H \n')).toEqual({
      kind: 'approve',
      request: 3,
      items: [1, 3],
      durationMs: 8 * H,
    });
    expect(accepted('Deny\t7')).toEqual({ kind: 'deny', request: 7 });
    expect(accepted('Status')).toEqual({ kind: 'status' });
    expect(accepted('Revoke ALL')).toEqual({ kind: 'revoke', target: 'all' });
    expect(accepted('approve  3   2')).toEqual({ kind: 'approve', request: 3, items: [2] });
  });

  it('sorts item numbers (the canonical form)', () => {
    expect(accepted('approve 3 3,1,2')).toEqual({ kind: 'approve', request: 3, items: [1, 2, 3] });
  });

  it('accepts numbers up to 15 digits, exactly', () => {
    expect(accepted('deny 999999999999999')).toEqual({ kind: 'deny', request: 999999999999999 });
  });
});

describe('parseCommand: chatter is ignored (null)', () => {
  it.each([
    '',
    '   ',
    'hello there',
    'thanks!',
    'ok',
    'hello',
    'what is request 3?',
    'lol 3',
    '👍',
  ])('%j', (text) => {
    expect(parseCommand(text)).toBeNull();
  });

  it('ignores a non-string (defensive: the gateway passes whatever the event held)', () => {
    expect(parseCommand(42 as unknown as string)).toBeNull();
    expect(parseCommand(undefined as unknown as string)).toBeNull();
  });
});

describe('parseCommand: mistyped commands are answered, not ignored', () => {
  it.each([
    ['aprove 3', 'approve'],
    ['approve3', 'approve'],
    ['Approved!', 'approve'],
    ['dney 3', 'deny'],
    ['revok all', 'revoke'],
    ['remove 3', 'revoke'],
    ['statsu', 'status'],
    ['hepl', 'help'],
  ])('%j suggests %s', (text, verb) => {
    expect(refused(text)).toContain(`did you mean "${verb}"`);
  });

  it('does not answer a near-verb followed by prose', () => {
    expect(parseCommand('approved the other thing yesterday')).toBeNull();
    expect(parseCommand('statue of liberty')).toBeNull();
  });
});

describe('attack: malformed numbers and lists are refused with a reason', () => {
  it.each([
    ['approve 3 1,,3', 'comma-separated'],
    ['approve 3 ,1', 'comma-separated'],
    ['approve 3 1,', 'comma-separated'],
    ['approve 3 1,1', 'listed twice'],
    ['approve 3 0', '1 or more'],
    ['approve 0', '1 or more'],
    ['approve 3 1,0', '1 or more'],
    ['approve -1', 'without a sign'],
    ['approve +3', 'without a sign'],
    ['deny +3', 'without a sign'],
    ['revoke -2', 'without a sign'],
    ['approve 03', 'leading zeros'],
    ['approve 3 01', 'leading zeros'],
    ['approve 99999999999999999999', 'too large'],
    ['approve 9007199254740993', 'too large'],
    ['approve 3 99999999999999999', 'too large'],
    ['approve 3x', 'number'],
    ['approve 3.0', 'number'],
    ['approve 0x10', 'number'],
    ['approve 1e3', 'number'],
    ['approve', 'missing'],
    ['deny', 'one request number or "all"'],
    ['deny 3 4', 'one request number or "all"'],
    ['deny every', 'number'],
    ['show', 'exactly one'],
    ['show 3 4', 'exactly one'],
    ['show all', 'number'],
    ['revoke', 'one word'],
    ['revoke 3 4', 'one word'],
    ['revoke all now', 'one word'],
    ['revoke ../etc', 'not a request number'],
    ['revoke a.b', 'not a request number'],
    ['revoke abcdefghijabcdefghijabcdefghijabc', 'not a request number'],
    ['status now', 'no arguments'],
    ['help me', 'no arguments'],
  ])('%j', (text, why) => {
    expect(refused(text)).toContain(why);
  });
});

describe('attack: undo with anything but its forms is refused with a reason', () => {
  it.each([
    'undo',
    'undo --dry-run',
    'undo 3 4',
    'undo --request',
    'undo --request 3 4',
    'undo --dry-run 3',
    'undo 3 --dry-run --dry-run',
    'undo -1',
    'undo 03',
    'undo all',
    'undo --request all',
    'undo 3 dry-run',
    'undo ３',
  ])('%j', (text) => {
    const r = parseCommand(text);
    expect(r).not.toBeNull();
    expect(r?.ok).toBe(false);
  });
});

describe('attack: malformed expiries are refused with a reason', () => {
  it.each([
    'approve 3 8x',
    'approve 3 1.5h',
    'approve 3 0h',
    'approve 3 -8h',
    'approve 3 8hh',
    'approve 3 1w',
    'approve 3 h',
    'approve 3 8ms',
    'approve 3 99999999999d',
    'approve 3 1,3 8x',
  ])('%j', (text) => {
    expect(refused(text)).toContain('expiry');
  });

  it('wrong answer fixed: a zero expiry says "longer than zero", not "a whole number and one unit"', () => {
    for (const text of ['approve 4 1,2 0h', 'approve 4 0m', 'approve 4 00d']) {
      const why = refused(text);
      expect(why).toContain('longer than zero');
      expect(why).not.toContain('whole number');
    }
    expect(refused('approve 3 99999999999d')).toContain('too large');
    expect(refused('approve 3 1.5h')).toContain('whole number and one unit');
  });

  it('refuses a split duration and extra words', () => {
    expect(refused('approve 3 8 h')).toContain('expiry');
    expect(refused('approve 3 1,3 8h extra')).toContain('too many words');
    expect(refused('approve 3 8h 1,3')).toContain('item numbers come first');
    expect(refused('approve 3 1, 3')).toContain('comma-separated');
  });
});

describe('attack: look-alike digits and letters', () => {
  it.each([
    ['approve ٣', 'Arabic-Indic three'],
    ['approve ۳', 'Extended Arabic-Indic three'],
    ['approve ３', 'fullwidth three'],
    ['approve 3 １,３', 'fullwidth items'],
    ['deny ३', 'Devanagari three'],
    ['approve 𝟑', 'mathematical bold three'],
    ['approve 3 8ｈ', 'fullwidth h'],
  ])('%j (%s) never parses as a number', (text) => {
    const reason = refused(text);
    expect(reason).toMatch(/digits 0-9|plain ASCII/);
  });

  it('refuses a verb written with a Cyrillic letter instead of ignoring or accepting it', () => {
    // "аpprove" with U+0430
    const reason = refused('\u0430pprove 3');
    expect(reason).toContain('did you mean "approve"');
  });

  it('ignores a fullwidth verb (not a command, nothing happens)', () => {
    expect(parseCommand('ａｐｐｒｏｖｅ 3')).toBeNull();
  });
});

describe('attack: invisible and injected characters', () => {
  it.each([
    ['approve 3\u200B', 'zero-width space'],
    ['approve \u200D3', 'zero-width joiner'],
    ['approve 3\u202E', 'right-to-left override'],
    ['approve 3 \u2066 8h', 'left-to-right isolate'],
    ['approve 3\u00AD', 'soft hyphen'],
    ['deny 3\uFEFF4', 'BOM inside'],
    ['approve 3\u0000', 'NUL'],
    ['approve 3\u001b[2J', 'terminal escape'],
  ])('%j (%s) is refused', (text) => {
    expect(refused(text)).toMatch(/plain ASCII|plain spaces/);
  });

  it('refuses a second command smuggled on another line', () => {
    expect(refused('deny 3\napprove 4')).toContain('one line');
    expect(refused('approve 3\r\nrevoke all')).toContain('one line');
    expect(refused('approve 3\u2028approve 4')).toContain('one line');
  });

  it('refuses non-ASCII spaces between words', () => {
    expect(refused('approve\u00A03')).toContain('plain spaces');
    expect(refused('approve 3\u30001,2')).toContain('plain spaces');
  });

  it('a leading zero-width character does not hide a command', () => {
    expect(refused('\u200Bapprove 3')).toContain('did you mean "approve"');
  });

  it('refuses markup and shell-ish payloads after a verb', () => {
    expect(refused('approve 3 <b>1</b>')).toContain('expiry');
    expect(refused('approve 3;revoke all')).toContain('number');
    expect(refused('revoke $(id)')).toContain('not a request number');
    expect(refused('revoke `all`')).toContain('not a request number');
    expect(refused('approve 3 1,3 8h && deny 3')).toContain('too many words');
  });

  it('refuses an overlong message that starts with a verb', () => {
    expect(refused(`approve 3 ${'1,'.repeat(150)}1`)).toContain('too long');
  });

  it('treats a reply-fallback quote that was not stripped as chatter, not as a command', () => {
    expect(parseCommand('> <@owner:example.org> approve 3\n\nthanks')).toBeNull();
  });
});

describe('properties', () => {
  it('parseCommand never throws and always returns null, ok, or a reason with the help hint', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (text) => {
        const r: ParseResult | null = parseCommand(text);
        if (r !== null && !r.ok) expect(r.reason.endsWith(HELP_HINT)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  const verbish = fc.oneof(
    fc.constantFrom(
      'approve',
      'deny',
      'revoke',
      'status',
      'help',
      'all',
      'APPROVE',
      'Revoke',
      'undo',
      '--request',
      '--dry-run',
    ),
    fc.stringMatching(/^[0-9,]{0,8}$/),
    fc.stringMatching(/^[0-9]{1,4}[smhdx]$/),
    fc.stringMatching(/^[a-z_-]{1,6}$/),
    fc.constantFrom('+3', '-1', '٣', '３', '\u200B', '0', '1,,2'),
  );

  it('command-shaped input never throws either', () => {
    fc.assert(
      fc.property(
        fc.array(verbish, { maxLength: 5 }),
        fc.constantFrom(' ', '  ', '\t'),
        (words, sep) => {
          parseCommand(words.join(sep));
        },
      ),
      { numRuns: 3000 },
    );
  });

  const number = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }).filter((n) => n < 1e15);
  const commandArb: fc.Arbitrary<Command> = fc.oneof(
    fc.record(
      {
        kind: fc.constant('approve' as const),
        request: number,
        items: fc
          .uniqueArray(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 8 })
          .map((a) => a.sort((x, y) => x - y)),
        durationMs: fc
          .tuple(
            fc.integer({ min: 1, max: 999_999 }),
            fc.constantFrom(1_000, 60_000, 3_600_000, 86_400_000),
          )
          .map(([n, u]) => n * u),
      },
      { requiredKeys: ['kind', 'request'] },
    ),
    fc.record({ kind: fc.constant('deny' as const), request: number }),
    fc.constant({ kind: 'deny_all' as const }),
    fc.record({ kind: fc.constant('show' as const), request: number }),
    fc.record({
      kind: fc.constant('revoke' as const),
      target: fc.oneof(
        fc.constant('all' as const),
        fc.record({ request: number }),
        fc
          .stringMatching(/^[a-z0-9_-]{1,32}$/)
          // Names that read as numbers, and `all`, cannot be revoked by name (documented).
          .filter((s) => s !== 'all' && !/^[+-]?[0-9]+$/.test(s))
          .map((instance) => ({ instance })),
      ),
    }),
    fc.constant({ kind: 'status' as const }),
    fc.constant({ kind: 'help' as const }),
    fc.record({
      kind: fc.constant('undo' as const),
      target: fc.oneof(fc.record({ seq: number }), fc.record({ request: number })),
      dryRun: fc.boolean(),
    }),
  );

  it('every command round-trips through its canonical text', () => {
    fc.assert(
      fc.property(commandArb, (command) => {
        expect(accepted(renderCommand(command))).toEqual(command);
      }),
      { numRuns: 3000 },
    );
  });

  it('every accepted text re-renders to a text that parses to the same command', () => {
    fc.assert(
      fc.property(fc.array(verbish, { minLength: 1, maxLength: 4 }), (words) => {
        const r = parseCommand(words.join(' '));
        if (r !== null && r.ok) expect(accepted(renderCommand(r.command))).toEqual(r.command);
      }),
      { numRuns: 3000 },
    );
  });

  it('no text with a non-ASCII character is ever accepted', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('approve 3', 'deny 3', 'revoke all', 'status', 'approve 3 1,2 8h'),
        fc.nat(),
        fc
          .string({ unit: 'binary', minLength: 1, maxLength: 3 })
          .filter((s) => /[^\p{ASCII}]/u.test(s)),
        (base, at, junk) => {
          const i = 1 + (at % base.length);
          const text = base.slice(0, i) + junk + base.slice(i);
          const r = parseCommand(text);
          // Whitespace at the ends is trimmed; anything else non-ASCII must not pass.
          if (r !== null && r.ok) expect(text.trim()).toMatch(/^[\x20-\x7e\t]*$/);
        },
      ),
      { numRuns: 3000 },
    );
  });
});
