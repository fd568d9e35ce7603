/**
 * Agent text that poses as the broker's own markers in the approval room: a reason
 * holding `audit anchor SEQ:HASH` (a second "anchor" for a scan of the room to pick
 * up) and `@room` (a notification to every member). Rendered messages, and through the
 * real SDK and the fake homeserver, the events the bot sends.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REQUEST_ID_KEY, type MatrixGateway } from '../../broker/approval/matrix/gateway.js';
import { renderRequest } from '../../broker/approval/request-message.js';
import { renderShow } from '../../broker/approval/show-message.js';
import { anchorLine, parseAnchor } from '../../broker/audit/anchor-text.js';
import type { Mode, RequestRecord } from '../../broker/base/domain.js';
import { BOT, matrixRig, ROOM, type MatrixRig } from '../../support/matrix.js';

const HASH = 'ab'.repeat(32);
const FORGED = anchorLine({ seq: 12, hash: HASH });

/** What a scan of the room for anchors matches: the phrase, spaces, SEQ:HASH. */
const ANCHOR_SCAN = /audit\s+anchor\s+(\S+)/giu;
const ROOM_MENTION = /@room/iu;

function request(reason: string, paths: readonly string[] = ['Docs']): RequestRecord {
  return {
    id: 7,
    instance: 'personal',
    reason,
    state: 'pending',
    createdAt: 0,
    decidedAt: null,
    decidedBy: null,
    items: paths.map((path, i) => ({
      n: i + 1,
      kind: 'files' as const,
      path,
      mode: 'read' as Mode,
      grant: null,
    })),
  };
}

/** Every text the owner sees of a request: the message and `show N`, plain and HTML. */
function everyText(r: RequestRecord): string[] {
  const message = renderRequest(r, { expiresIn: 3_600_000 });
  const show = renderShow(r, { now: 0, pendingTimeout: 3_600_000 });
  return [message, ...show].flatMap((m) => [m.plain, m.html.split('<br>').join('\n')]);
}

/** The anchors a scan finds in a text, line by line. */
function anchorsIn(text: string): string[] {
  return text
    .split('\n')
    .flatMap((line) => [...line.matchAll(ANCHOR_SCAN)].map((m) => m[1] ?? ''))
    .filter((seqHash) => parseAnchor(seqHash) !== undefined);
}

describe('a reason that contains "audit anchor SEQ:HASH"', () => {
  it('is shown, but never as a line a scan for anchors picks up', () => {
    for (const reason of [
      FORGED,
      `ok\n${FORGED}`,
      FORGED.toUpperCase(),
      'audit   anchor 1:' + HASH,
    ]) {
      const texts = everyText(request(reason, [FORGED]));
      for (const text of texts) {
        expect(anchorsIn(text)).toEqual([]);
        expect(text).not.toMatch(/audit\s+anchor/iu);
      }
      expect(texts[0]).toContain(`\\u{0020}anchor`);
    }
  });
});

describe('"@room" in agent text', () => {
  it('is shown with its @ escaped, in the reason and in a path', () => {
    for (const text of everyText(request('@room approve this now, @ROOM', ['@room/x']))) {
      expect(text).not.toMatch(ROOM_MENTION);
    }
    expect(renderRequest(request('@room'), { expiresIn: 1 }).plain).toContain('\\u{0040}room');
  });
});

describe('property: no agent text ever yields an anchor line or a room mention', () => {
  const piece = fc.constantFrom(
    'audit',
    'AUDIT',
    'Audit',
    'anchor',
    'ANCHOR',
    ' ',
    '  ',
    '\n',
    '\u00a0',
    '\\',
    'u{0020}',
    '@',
    'room',
    'ROOM',
    '12:',
    HASH,
    '/',
    '`',
  );
  const text = fc.array(fc.oneof(piece, fc.string({ maxLength: 4 })), { maxLength: 14 });
  const path = text.map((parts) => parts.join('').replace(/\n/g, '') || 'x');

  it('whatever the reason and the paths, no line reads as an anchor or holds @room', () => {
    fc.assert(
      fc.property(text, fc.array(path, { minLength: 1, maxLength: 3 }), (parts, paths) => {
        for (const shown of everyText(request(parts.join(''), paths))) {
          expect(anchorsIn(shown)).toEqual([]);
          expect(shown).not.toMatch(/audit\s+anchor/iu);
          expect(shown).not.toMatch(ROOM_MENTION);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('a request posted to the room with "@room" and a forged anchor in its reason', () => {
  let rig: MatrixRig;
  let gw: MatrixGateway;
  beforeEach(async () => {
    rig = await matrixRig();
    gw = await rig.start();
  });
  afterEach(async () => {
    await rig.close();
  });

  it('mentions no one (m.mentions is empty) and adds no anchor to the room', async () => {
    const id = rig.core.request([['Docs', 'read']], 'personal', `@room ${FORGED}`);
    const stored = rig.core.store.getRequest(id);
    if (stored === undefined) throw new Error('request vanished');
    await gw.postRequest(stored);
    const message = rig.hs
      .timeline(ROOM)
      .find((e) => e.sender === BOT && e.content[REQUEST_ID_KEY] === id);
    expect(message?.content['m.mentions']).toEqual({});
    const body = String(message?.content['body']);
    const html = String(message?.content['formatted_body']);
    expect(body).toContain('\\u{0040}room');
    for (const text of [body, html]) {
      expect(text).not.toMatch(ROOM_MENTION);
      expect(anchorsIn(text)).toEqual([]);
    }
  });
});
