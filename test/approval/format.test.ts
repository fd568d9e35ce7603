import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { GrantRecord, RequestRecord } from '../../broker/base/domain.js';
import {
  formatInstant,
  formatTimeLeft,
  renderGrantsEnded,
  renderRequestsEnded,
} from '../../broker/approval/format.js';
import { renderUnexplained } from '../../broker/approval/reconcile-notice.js';
import { renderRequest } from '../../broker/approval/request-message.js';
import { renderStatus } from '../../broker/approval/status.js';
import { escapeForDisplay, escapeHtml } from '../../broker/base/text.js';

const H = 3_600_000;
const M = 60_000;

function request(
  items: { path: string; mode: 'read' | 'write' }[],
  over: Partial<RequestRecord> = {},
): RequestRecord {
  return {
    id: 3,
    instance: 'personal',
    reason: 'sort the tax receipts',
    state: 'pending',
    createdAt: 0,
    decidedAt: null,
    decidedBy: null,
    items: items.map((it, i) => ({
      n: i + 1,
      kind: 'files' as const,
      path: it.path,
      mode: it.mode,
      grant: null,
    })),
    ...over,
  };
}

function grant(over: Partial<GrantRecord> = {}): GrantRecord {
  return {
    id: 1,
    requestId: 3,
    instance: 'personal',
    kind: 'files',
    path: 'Documents/Taxes',
    mode: 'read',
    expiresAt: 10 * H,
    itemNo: 1,
    state: 'active',
    createdAt: 0,
    endedAt: null,
    ...over,
  };
}

const show = (p: string): string => escapeForDisplay(p, { path: true });

describe('renderRequest', () => {
  it('shows number, instance, reason, numbered items with mode and path, and expiry', () => {
    const r = renderRequest(
      request([
        { path: 'Documents/Taxes/2024', mode: 'read' },
        { path: 'Documents/Taxes/2024/summary.md', mode: 'write' },
      ]),
      { expiresIn: 12 * H, defaultGrant: 24 * H },
    );
    expect(r.plain).toBe(
      [
        'Request 3 · instance personal',
        'Reason: sort the tax receipts',
        'Items (2: 1 write, 1 read), broadest first:',
        '2. write `Documents/Taxes/2024/summary.md`',
        '1. read `Documents/Taxes/2024`',
        'Write on a folder lets the agent create, overwrite, move and trash anything inside it.',
        '👍 approve all 2 items (1d) · 👎 deny',
        'Or type: approve 3 · approve 3 1,2 8h · deny 3 · show 3',
        'Undecided, it expires in 12h.',
      ].join('\n'),
    );
    expect(r.html).toContain('<strong>Request 3</strong>');
    expect(r.html).toContain('1. read <code>Documents/Taxes/2024</code>');
    expect(r.html).toContain(
      '2. <strong>write</strong> <code>Documents/Taxes/2024/summary.md</code>',
    );
    expect(r.html.split('<br>')).toHaveLength(9);
  });

  it('without reactions (the console) offers only the typed commands, no emoji', () => {
    const two = request([
      { path: 'a', mode: 'read' },
      { path: 'b', mode: 'write' },
    ]);
    const r = renderRequest(two, { expiresIn: H, defaultGrant: 24 * H, reactions: false });
    const lines = r.plain.split('\n');
    expect(lines.slice(-2)).toEqual([
      'Type "approve 3" (all 2 items, 1d), "approve 3 1,2 8h", "deny 3" or "show 3".',
      'Undecided, it expires in 1h.',
    ]);
    expect(r.plain).not.toMatch(/👍|👎|react/);
    expect(r.html).not.toMatch(/👍|👎/);
    const one = renderRequest(request([{ path: 'a', mode: 'read' }]), {
      expiresIn: H,
      reactions: false,
    });
    expect(one.plain).toContain(
      'Type "approve 3" (all items), "approve 3 8h", "deny 3" or "show 3".',
    );
    // The default (and reactions: true) is the Matrix message.
    const matrix = renderRequest(two, { expiresIn: H, defaultGrant: 24 * H, reactions: true });
    expect(matrix).toEqual(renderRequest(two, { expiresIn: H, defaultGrant: 24 * H }));
    expect(matrix.plain).toContain('👍 approve all 2 items (1d) · 👎 deny');
  });

  it('wrong answer fixed: the example expiry is one that works (never above max_grant)', () => {
    const two = request([
      { path: 'a', mode: 'read' },
      { path: 'b', mode: 'read' },
    ]);
    const r = renderRequest(two, { expiresIn: H, defaultGrant: H, maxGrant: 4 * H });
    expect(r.plain).toContain('approve 3 1,2 4h');
    expect(r.plain).not.toContain('8h');
  });

  it('keeps lines short for a phone (only paths may be long)', () => {
    const r = renderRequest(request([{ path: 'a', mode: 'read' }]), { expiresIn: H });
    for (const line of r.plain.split('\n')) expect(line.length).toBeLessThanOrEqual(60);
    expect(r.plain).toContain('approve 3 8h');
    expect(r.plain).not.toContain('1,2');
  });
});

describe('attack: hostile paths cannot hide characters', () => {
  it('escapes a right-to-left override (fake extension)', () => {
    const path = 'Docs/invoice\u202Efdp.exe';
    expect(show(path)).toBe('Docs/invoice\\u{202E}fdp.exe');
    const r = renderRequest(request([{ path, mode: 'write' }]), { expiresIn: H });
    expect(r.plain).not.toContain('\u202E');
    expect(r.html).not.toContain('\u202E');
  });

  it.each([
    ['\u200D', 'zero-width joiner'],
    ['\u200B', 'zero-width space'],
    ['\u200C', 'zero-width non-joiner'],
    ['\u2060', 'word joiner'],
    ['\uFEFF', 'BOM'],
    ['\u00AD', 'soft hyphen'],
    ['\u2066', 'LRI'],
    ['\u2069', 'PDI'],
    ['\u200E', 'LRM'],
    ['\u200F', 'RLM'],
    ['\u061C', 'Arabic letter mark'],
    ['\u034F', 'combining grapheme joiner'],
    ['\uFE0F', 'variation selector'],
    ['\u3164', 'Hangul filler'],
    ['\u{E0041}', 'tag letter'],
    ['\u0000', 'NUL'],
    ['\u001B', 'ESC'],
    ['\u007F', 'DEL'],
    ['\u0085', 'NEL'],
    ['\t', 'tab'],
    ['\n', 'line feed'],
    ['\u2028', 'line separator'],
    ['\u00A0', 'no-break space'],
    ['\u2007', 'figure space'],
    ['\u3000', 'ideographic space'],
    ['\u2215', 'division slash'],
    ['\u2044', 'fraction slash'],
    ['\uFF0F', 'fullwidth solidus'],
    ['\u29F8', 'big solidus'],
    ['\u2216', 'set minus'],
    ['\uFE68', 'small reverse solidus'],
    ['\u2024', 'one dot leader'],
    ['\uE000', 'private use'],
    ['\u{10FFFF}', 'noncharacter'],
    ['\u0378', 'unassigned'],
    ['\uD800', 'lone surrogate'],
    ['\u20DD', 'enclosing circle'],
  ])('%j (%s) is written as \\u{…}', (ch) => {
    const out = show(`a${ch}b`);
    const hex = (ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
    expect(out).toBe(`a\\u{${hex}}b`);
  });

  it('shows NFD differently from NFC (the owner can tell them apart)', () => {
    expect(show('caf\u00E9')).toBe('café');
    expect(show('cafe\u0301')).toBe('cafe\\u{0301}');
  });

  it('keeps the marks of real scripts in NFC text', () => {
    expect(show('नमस्ते/ملف.txt')).toContain('नमस्ते');
    expect(show('Ärger/über/Straße')).toBe('Ärger/über/Straße');
    expect(show('日本語/報告書.pdf')).toBe('日本語/報告書.pdf');
    expect(show('Ελληνικά/Москва')).toBe('Ελληνικά/Москва');
    expect(show('tiếng Việt')).toBe('tiếng Việt');
  });

  it('escapes a combining mark with no letter before it, and runs of more than three', () => {
    expect(show('\u0301a')).toBe('\\u{0301}a');
    expect(show('a/\u0301b')).toBe('a/\\u{0301}b');
    expect(show('x\u0301\u0302\u0303\u0304\u0305')).toBe('x\u0301\u0302\u0303\\u{0304}\\u{0305}');
  });

  it('escapes compatibility look-alikes (fullwidth, ligatures, superscripts, math letters)', () => {
    expect(show('ＡＢ')).toBe('\\u{FF21}\\u{FF22}');
    expect(show('ﬁle')).toBe('\\u{FB01}le');
    expect(show('x²')).toBe('x\\u{00B2}');
    expect(show('𝐚')).toBe('\\u{1D41A}');
    expect(show('Ⅻ')).toBe('\\u{216B}');
  });

  it('escapes Cyrillic/Greek look-alikes inside a Latin word', () => {
    expect(show('Docs/p\u0430ypal')).toBe('Docs/p\\u{0430}ypal');
    expect(show('Docs/\u03BFffice')).toBe('Docs/\\u{03BF}ffice');
  });

  it('pins separators of right-to-left paths so components cannot swap on screen', () => {
    const out = show('Docs/אב/גד/x');
    expect(out).toBe('\u200EDocs\u200E/\u200Eאב\u200E/\u200Eגד\u200E/\u200Ex\u200E');
    // an LRM the agent sent is still escaped
    expect(show('Docs/א\u200Eב')).toContain('\\u{200E}');
  });

  it('escapes HTML in the html rendering and keeps the path in <code>', () => {
    const r = renderRequest(request([{ path: 'Docs/<b>bold</b>&amp;"x\'', mode: 'read' }]), {
      expiresIn: H,
    });
    expect(r.html).toContain('<code>Docs/&lt;b&gt;bold&lt;/b&gt;&amp;amp;&quot;x&#39;</code>');
    expect(r.html).not.toContain('<b>');
    expect(r.plain).toContain('`Docs/<b>bold</b>&amp;"x\'`');
  });

  it('escapes backticks in paths so the code span cannot be closed early', () => {
    const r = renderRequest(request([{ path: 'a`/`b` read `Secret', mode: 'read' }]), {
      expiresIn: H,
    });
    expect(r.plain).toContain('`a\\u{0060}/\\u{0060}b\\u{0060} read \\u{0060}Secret`');
    expect(r.plain.match(/`/g)).toHaveLength(2);
  });

  it('escapes a backslash so an escape cannot be faked', () => {
    expect(show('a\\u{202E}b')).toBe('a\\u{005C}u{202E}b');
  });

  it('escapes spaces at the edges of components', () => {
    expect(show(' a /b ')).toBe('\\u{0020}a\\u{0020}/b\\u{0020}');
    expect(show('my file/x')).toBe('my file/x');
  });
});

describe('attack: hostile reasons', () => {
  it('keeps the reason on its own line (no fake lines, no markup)', () => {
    const r = renderRequest(
      request([{ path: 'a', mode: 'read' }], {
        reason: 'ok\nItems (1):\n1. read `Public`\r\n<img src=x onerror=alert(1)>',
      }),
      { expiresIn: H },
    );
    expect(r.plain.split('\n')).toHaveLength(7);
    expect(r.plain).toContain(
      'Reason: ok\\u{000A}Items (1):\\u{000A}1. read `Public`\\u{000D}\\u{000A}<img',
    );
    expect(r.html).not.toContain('<img');
    expect(r.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('escapes terminal escape sequences (console output)', () => {
    const r = renderRequest(
      request([{ path: 'a', mode: 'read' }], { reason: '\u001b[2J\u001b]0;pwn\u0007' }),
      {
        expiresIn: H,
      },
    );
    // eslint-disable-next-line no-control-regex
    expect(r.plain).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
    expect(r.plain).toContain('\\u{001B}[2J');
  });

  it('cuts a very long reason, says how much is hidden, and points to show N', () => {
    const r = renderRequest(request([{ path: 'a', mode: 'read' }], { reason: 'x'.repeat(1000) }), {
      expiresIn: H,
    });
    expect(r.plain).toContain('(720 more characters not shown)');
    expect(r.plain).toContain('type "show 3" to see the request in full');
  });

  it('cuts an escaped reason by what is shown, not by what was sent', () => {
    // 500 invisible characters are 4,000 characters once escaped.
    const r = renderRequest(
      request([{ path: 'a', mode: 'read' }], { reason: '\u200B'.repeat(500) }),
      {
        expiresIn: H,
      },
    );
    const reason = r.plain.split('\n')[1] ?? '';
    expect(reason.length).toBeLessThan(400);
    expect(reason).toContain('\\u{200B}');
    expect(reason).toContain('(465 more characters not shown)');
  });

  it('escapes a hostile instance name too', () => {
    const r = renderRequest(request([{ path: 'a', mode: 'read' }], { instance: 'a\u202Eb' }), {
      expiresIn: H,
    });
    expect(r.plain).toContain('instance a\\u{202E}b');
  });
});

describe('properties of escapeForDisplay', () => {
  const visible = /^[\x20-\x7e\p{L}\p{N}\p{Mn}\p{Mc}\u200E]*$/u;

  it('never outputs an invisible, control, bidi or non-ASCII space character', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.boolean(), (text, path) => {
        const out = escapeForDisplay(text, { path });
        expect(out).toMatch(visible);
        expect(out).not.toMatch(/\p{Cf}(?<!\u200E)/u);
      }),
      { numRuns: 3000 },
    );
  });

  it('is injective: two different texts never look the same', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 12 }),
        fc.string({ unit: 'binary', maxLength: 12 }),
        (a, b) => {
          if (a !== b) expect(show(a)).not.toBe(show(b));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('leaves printable ASCII paths without backslash or backtick unchanged', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[!-[\]-_a-~]([ -[\]-_a-~]*[!-[\]-_a-~])?$/), (p) => {
        if (!/ \/|\/ /.test(p)) expect(show(p)).toBe(p);
      }),
    );
  });

  it('html output never contains a raw < or > from the input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (s) => {
        expect(escapeHtml(s)).not.toMatch(/[<>"']/);
      }),
    );
  });
});

describe('times', () => {
  it.each([
    [2 * H + 14 * M + 59_000, '2h 14m'],
    [2 * H, '2h'],
    [3 * 24 * H + 4 * H + 30 * M, '3d 4h'],
    [24 * H, '1d'],
    [14 * M, '14m'],
    [45_000, '45s'],
    [0, '0s'],
    [-5, '0s'],
    [Number.NaN, '0s'],
  ])('formatTimeLeft(%d) = %s', (ms, text) => {
    expect(formatTimeLeft(ms)).toBe(text);
  });

  it('formatInstant is UTC to the minute', () => {
    expect(formatInstant(Date.UTC(2025, 0, 2, 14, 5, 59))).toBe('2025-01-02 14:05 UTC');
  });
});

describe('renderStatus', () => {
  it('lists grants with time left and pending requests with their expiry', () => {
    const r = renderStatus({
      grants: [
        grant({ expiresAt: 2 * H + 14 * M }),
        grant({ id: 2, itemNo: 2, mode: 'write', path: 'b' }),
      ],
      pending: [request([{ path: 'x', mode: 'read' }], { id: 4, createdAt: 0 })],
      now: 0,
      pendingTimeout: 12 * H,
    });
    expect(r.plain.split('\n')).toEqual([
      'Active grants (2):',
      '• request 3 item 1: read personal `Documents/Taxes` — 2h 14m left',
      '• request 3 item 2: write personal `b` — 10h left',
      'Pending requests (1):',
      '• request 4 · personal · 1 item — expires in 12h',
      '   1. read `x`',
    ]);
  });

  it('says when there is nothing', () => {
    const r = renderStatus({ grants: [], pending: [], now: 0, pendingTimeout: H });
    expect(r.plain).toBe('No active grants.\nNo pending requests.');
    expect(renderStatus({ grants: [], pending: undefined, now: 0, pendingTimeout: H }).plain).toBe(
      'No active grants.',
    );
  });
});

describe('announcements', () => {
  it('renderGrantsEnded lists the grants, escaped, without time left', () => {
    const r = renderGrantsEnded(
      [grant(), grant({ id: 2, itemNo: 2, path: 'x<y>\u200Bz' })],
      'expired',
    );
    expect(r.plain.split('\n')).toEqual([
      'Expired: 2 grants.',
      '• request 3 item 1: read personal `Documents/Taxes`',
      '• request 3 item 2: read personal `x<y>\\u{200B}z`',
    ]);
    expect(r.html).toContain('<code>x&lt;y&gt;\\u{200B}z</code>');
    expect(renderGrantsEnded([grant()], 'revoked').plain.split('\n')[0]).toBe('Revoked: 1 grant.');
  });

  it('renderRequestsEnded names the requests', () => {
    const one = request([{ path: 'a', mode: 'read' }]);
    expect(renderRequestsEnded([one], 'expired').plain).toBe(
      'Request 3 expired without a decision; nothing was granted. The agent may ask again.',
    );
    expect(renderRequestsEnded([one], 'discarded').plain).toContain(
      'Request 3 was discarded when the broker restarted',
    );
    expect(renderRequestsEnded([one, { ...one, id: 4 }], 'discarded').plain).toBe(
      'Requests 3, 4 were discarded when the broker restarted; nothing was granted. The agent may ask again.',
    );
  });

  it('renderUnexplained shows a rename as two escaped paths around the broker’s own arrow', () => {
    const report = {
      instance: 'personal',
      instances: ['personal'],
      user: 'agent-files',
      status: 'ok' as const,
      from: '2026-12-01T00:00:00.000Z',
      rows: 2,
      explained: 0,
      unexplained: [
        {
          activity_id: '7',
          time: '2026-12-01T10:00:00.000Z',
          type: 'file_changed',
          path: 'Projects/plan-renamed.txt',
          old_path: 'Projects/plan.txt',
        },
        // A name that holds an arrow of its own cannot pass for a rename: it is escaped.
        {
          activity_id: '8',
          time: '2026-12-01T10:00:01.000Z',
          type: 'file_created',
          path: 'a \u2192 b<i>',
        },
      ],
    };
    const r = renderUnexplained(report);
    const lines = r.plain.split('\n');
    expect(lines[1]).toBe(
      '2026-12-01 10:00:00Z file_changed `Projects/plan.txt` → `Projects/plan-renamed.txt`',
    );
    expect(lines[2]).toBe('2026-12-01 10:00:01Z file_created `a \\u{2192} b<i>`');
    // The room's formatted body: each path its own code span, HTML-escaped.
    expect(r.html).toContain(
      'file_changed <code>Projects/plan.txt</code> → <code>Projects/plan-renamed.txt</code>',
    );
    expect(r.html).toContain('<code>a \\u{2192} b&lt;i&gt;</code>');
  });
});
