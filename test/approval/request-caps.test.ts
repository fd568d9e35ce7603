/**
 * Attack: one request hides its broadest item. An agent sends item 1 `write Docs`
 * followed by 49 paths of 2,700 characters: printed whole, that was 134,546 bytes and
 * the broad item and the reason scrolled far off screen. The message now stays short
 * (capped paths, at most MAX_ITEMS_SHOWN items, broadest first), says what write on a
 * folder allows, and points to `show N`, which shows everything, escaped, split into
 * messages a homeserver accepts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_ITEMS_SHOWN,
  MAX_REQUEST_MESSAGE_CHARS,
  renderRequest,
} from '../../broker/approval/request-message.js';
import {
  contentBytes,
  MESSAGE_BUDGET_BYTES,
  renderShow,
} from '../../broker/approval/show-message.js';
import { displayUnits, shownPath } from '../../broker/approval/shown.js';
import type { Mode, RequestRecord } from '../../broker/base/domain.js';
import { escapeForDisplay } from '../../broker/base/text.js';
import { canonicalPath } from '../../broker/wall.js';

const H = 3_600_000;

function request(items: [string, Mode][], over: Partial<RequestRecord> = {}): RequestRecord {
  return {
    id: 7,
    instance: 'personal',
    reason: 'tidy the shared documents',
    state: 'pending',
    createdAt: 0,
    decidedAt: null,
    decidedBy: null,
    items: items.map(([path, mode], i) => ({
      n: i + 1,
      kind: 'files' as const,
      path,
      mode,
      grant: null,
    })),
    ...over,
  };
}

/** A path of `length` characters under `top`, made of 200-character components. */
function deepPath(top: string, length: number, tag: string): string {
  const parts = [top];
  let size = top.length;
  while (size < length - 210) {
    const component = `${tag}${'x'.repeat(199 - tag.length)}`;
    parts.push(component);
    size += component.length + 1;
  }
  parts.push(`file-${tag}.txt`);
  return parts.join('/');
}

const flood = (): [string, Mode][] => [
  ['Docs', 'write'],
  ...Array.from({ length: 49 }, (_, i): [string, Mode] => [
    deepPath('Docs', 2700, `d${i}`),
    'read',
  ]),
];

const opts = { expiresIn: 12 * H, defaultGrant: 24 * H, maxGrant: 7 * 24 * H };

describe('attack: write Docs followed by 49 paths of 2,700 characters', () => {
  it('renders under the cap with the reason and item 1 near the top', () => {
    const items = flood();
    expect(items.every(([p]) => canonicalPath(p).ok)).toBe(true);
    const r = renderRequest(request(items), opts);
    expect(r.plain.length).toBeLessThanOrEqual(MAX_REQUEST_MESSAGE_CHARS);
    const lines = r.plain.split('\n');
    expect(lines[1]).toBe('Reason: tidy the shared documents');
    expect(lines[3]).toBe('1. write `Docs`');
    expect(r.plain).toContain(`… and ${50 - MAX_ITEMS_SHOWN} more items: type "show 7"`);
    expect(r.plain).toContain('create, overwrite, move and trash anything inside it');
    expect(r.plain).toContain('👍 approve all 50 items');
    expect(r.html.length).toBeLessThan(3 * MAX_REQUEST_MESSAGE_CHARS);
  });

  it('lists the broad item first even when the agent puts it last', () => {
    const items = flood();
    const last = [...items.slice(1), items[0]!];
    const lines = renderRequest(request(last), opts).plain.split('\n');
    expect(lines[3]).toBe('50. write `Docs`');
    expect(lines[2]).toBe('Items (50: 1 write, 49 read), broadest first:');
  });

  it('a shallow read folder is listed before deep paths of the same mode', () => {
    const items: [string, Mode][] = [
      ...Array.from({ length: 20 }, (_, i): [string, Mode] => [`A/B/C/f${i}.txt`, 'read']),
      ['Photos', 'read'],
    ];
    const lines = renderRequest(request(items), opts).plain.split('\n');
    expect(lines[3]).toBe('21. read `Photos`');
  });
});

describe('attack: a long path hides what differs', () => {
  it('two long siblings, Docs and Docs2, stay distinguishable: the start is shown', () => {
    const a = deepPath('Docs', 2600, 'same');
    const b = deepPath('Docs2', 2600, 'same');
    const shownA = shownPath(a).shown;
    const shownB = shownPath(b).shown;
    expect(shownA).not.toBe(shownB);
    expect(shownA.startsWith('Docs/')).toBe(true);
    expect(shownB.startsWith('Docs2/')).toBe(true);
    // The end (the file name) stays visible as well.
    expect(shownA.endsWith('/file-same.txt')).toBe(true);
  });

  it('a dot-dot in the hidden middle cannot happen: the wall refuses it first', () => {
    const sneaky = `Docs/${'x'.repeat(200)}/${'y'.repeat(200)}/../../Secrets`;
    expect(canonicalPath(sneaky).ok).toBe(false);
  });

  it('the marker says how much is hidden and cannot be forged by the agent', () => {
    const path = `Docs/…[3 chars hidden]…/${'z'.repeat(150)}/end.txt`;
    const { shown, hidden } = shownPath(path);
    expect(hidden).toBeGreaterThan(0);
    // The agent's own ellipsis is shown escaped; only ours is a real one.
    expect(shown).toContain('\\u{2026}[3 chars hidden]\\u{2026}');
    expect(shown.match(/…/g)).toHaveLength(2);
    expect(shown).toContain(`…[${hidden} chars hidden]…`);
  });

  it('escaping still shows every hidden character in what is shown', () => {
    const path = `Docs/in\u202Evoice${'a'.repeat(200)}/${'b'.repeat(200)}/r\u200Bep\u2028ort.pdf`;
    const { shown } = shownPath(path);
    expect(shown).toContain('in\\u{202E}voice');
    expect(shown).toContain('r\\u{200B}ep\\u{2028}ort.pdf');
    expect(shown).not.toMatch(/[\u202E\u200B\u2028]/);
  });

  it('a cut never splits an escape or a letter from its accent', () => {
    const path = `${'\u200B'.repeat(30)}/${'x\u0301'.repeat(100)}/${'\u202E'.repeat(30)}`;
    const { shown, hidden } = shownPath(path);
    expect(hidden).toBeGreaterThan(0);
    const [head = '', tail = ''] = shown.split(/…\[\d+ chars hidden\]…/u);
    for (const piece of [head, tail]) {
      // Every backslash starts a whole escape.
      expect(piece.replace(/\\u\{[0-9A-F]{4,6}\}/gu, '')).not.toContain('\\');
    }
    expect(tail).not.toMatch(/^\p{M}/u);
  });
});

describe('properties of shown paths and request messages', () => {
  const anyPath = fc.string({ unit: 'binary', minLength: 1, maxLength: 400 });

  it('a shown path is a prefix and a suffix of the whole, with the rest counted', () => {
    fc.assert(
      fc.property(anyPath, (path) => {
        const full = escapeForDisplay(path, { path: true });
        const { shown, hidden } = shownPath(path);
        if (hidden === 0) {
          expect(shown).toBe(full);
          return;
        }
        const m = /^(.*?)\u200E?…\[(\d+) chars hidden\]…\u200E?(.*)$/su.exec(shown);
        expect(m).not.toBeNull();
        const [, head = '', count = '', tail = ''] = m ?? [];
        expect(full.startsWith(head)).toBe(true);
        expect(full.endsWith(tail)).toBe(true);
        expect(Number(count)).toBe(hidden);
        expect(displayUnits(head).length + hidden + displayUnits(tail).length).toBe(
          displayUnits(full).length,
        );
        expect(shown.length).toBeLessThanOrEqual(72 + 30);
      }),
      { numRuns: 2000 },
    );
  });

  it('any request, however hostile, renders under the cap with its broadest item listed', () => {
    const item = fc.tuple(
      fc.string({ unit: 'binary', minLength: 1, maxLength: 3000 }),
      fc.constantFrom<Mode>('read', 'write'),
    );
    fc.assert(
      fc.property(
        fc.array(item, { minLength: 1, maxLength: 50 }),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 500 }),
        (items, reason) => {
          const r = renderRequest(request(items, { reason }), opts);
          expect(r.plain.length).toBeLessThanOrEqual(MAX_REQUEST_MESSAGE_CHARS);
          const writes = items.map((it, i) => ({ n: i + 1, mode: it[1] }));
          const firstWrite = writes.find((w) => w.mode === 'write');
          if (firstWrite !== undefined) {
            expect(r.plain.split('\n')[3]?.includes(' write `')).toBe(true);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('show N: the full list, escaped, in messages a homeserver accepts', () => {
  it('shows every item in full and splits 50 huge items into parts under the budget', () => {
    const items = flood();
    const parts = renderShow(request(items), { now: 0, pendingTimeout: 12 * H });
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(contentBytes(part)).toBeLessThanOrEqual(MESSAGE_BUDGET_BYTES);
    expect(parts[0]?.plain).toContain(`(part 1 of ${parts.length})`);
    expect(parts[1]?.plain).toContain(`Request 7, continued (part 2 of ${parts.length}):`);
    const all = parts.map((p) => p.plain).join('\n');
    expect(all).toContain('Reason: tidy the shared documents');
    for (const [i, [path, mode]] of items.entries()) {
      expect(all).toContain(`${i + 1}. ${mode} \`${path}\` — waiting for your decision`);
    }
  });

  it('the worst single item (3,000 bytes, each shown as an 8-character escape) fits one message', () => {
    // A backtick is one byte sent and `\u{0060}` shown, in the body and the HTML body.
    const path = [...Array.from({ length: 14 }, () => '`'.repeat(200)), '`'.repeat(186)].join('/');
    expect(Buffer.byteLength(path)).toBe(3000);
    expect(canonicalPath(path).ok).toBe(true);
    const parts = renderShow(request([[path, 'write']]), { now: 0, pendingTimeout: H });
    expect(parts).toHaveLength(1);
    expect(contentBytes(parts[0]!)).toBeLessThanOrEqual(MESSAGE_BUDGET_BYTES);
    const many = renderShow(
      request(Array.from({ length: 50 }, (): [string, Mode] => [path, 'read'])),
      { now: 0, pendingTimeout: H },
    );
    expect(many.length).toBeGreaterThan(40);
    for (const part of many) expect(contentBytes(part)).toBeLessThanOrEqual(MESSAGE_BUDGET_BYTES);
    const ticks = [...path].filter((c) => c === '`').length;
    expect(
      many
        .map((p) => p.plain)
        .join('\n')
        .split('\\u{0060}').length - 1,
    ).toBe(50 * ticks);
  });

  it('says what became of each item once decided', () => {
    const base = request([
      ['a', 'read'],
      ['b', 'write'],
    ]);
    const grant = {
      id: 1,
      requestId: 7,
      instance: 'personal',
      kind: 'files' as const,
      path: 'a',
      mode: 'read' as const,
      expiresAt: 3 * H,
      itemNo: 1,
      state: 'active' as const,
      createdAt: 0,
      endedAt: null,
    };
    const decided: RequestRecord = {
      ...base,
      state: 'partially_approved',
      decidedAt: 0,
      decidedBy: 'console',
      items: [{ ...base.items[0]!, grant }, base.items[1]!],
    };
    const [shown] = renderShow(decided, { now: H, pendingTimeout: H });
    expect(shown?.plain).toContain('partially approved by console at 1970-01-01 00:00 UTC');
    expect(shown?.plain).toContain('1. read `a` — granted until 1970-01-01 03:00 UTC (2h left)');
    expect(shown?.plain).toContain('2. write `b` — not granted');
    const revoked = { ...grant, state: 'revoked' as const, endedAt: 2 * H };
    const [after] = renderShow(
      { ...decided, items: [{ ...base.items[0]!, grant: revoked }, base.items[1]!] },
      { now: 2 * H, pendingTimeout: H },
    );
    expect(after?.plain).toContain('granted, revoked at 1970-01-01 02:00 UTC');
  });
});
