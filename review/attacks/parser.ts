/**
 * Attacks on the approver's command language, end to end through the real
 * ApprovalEngine, GrantStore and AuditLog (support/approval.ts): each case makes a
 * fresh two-item request N, sends one typed message or reaction as the approver, and
 * reports what happened to N: `approved`, `denied`, … (it changed), `answered,
 * nothing changed` (a refusal the owner sees), or `ignored` (chatter).
 */
import { harness, type Harness } from '../../support/approval.js';
import type { Case, Group } from '../runner.js';

const OWNER = '@owner:hs.test';

/** Writes the decimal digits of `n` with the digits of another script (zero at `zero`). */
function digits(n: number, zero: number): string {
  return [...String(n)].map((d) => String.fromCodePoint(zero + Number(d))).join('');
}

async function typed(h: Harness, text: (n: number) => string): Promise<string> {
  const n = h.request([
    ['Docs', 'read'],
    ['Notes', 'write'],
  ]);
  const grantsBefore = h.store.activeGrants().length;
  const reply = await h.engine.handleText(text(n), OWNER);
  return outcome(h, n, grantsBefore, reply === null);
}

async function reacted(h: Harness, key: string): Promise<string> {
  const n = h.request([['Docs', 'read']]);
  const grantsBefore = h.store.activeGrants().length;
  const reply = await h.engine.handleReaction(key, n, OWNER);
  return outcome(h, n, grantsBefore, reply === null);
}

function outcome(h: Harness, n: number, grantsBefore: number, ignored: boolean): string {
  const state = h.store.getRequest(n)?.state ?? 'missing';
  const grantsNow = h.store.activeGrants().length;
  if (state !== 'pending') return state;
  if (grantsNow !== grantsBefore)
    return `pending but grants changed (${grantsBefore}→${grantsNow})`;
  return ignored ? 'ignored' : 'answered, nothing changed';
}

export const parserGroup: Group = {
  title: 'attacks: the approval parser through the real engine (typed commands and reactions)',
  async build() {
    const h = await harness();
    const text = (
      name: string,
      expect: string,
      make: (n: number) => string,
      finding?: string,
    ): Case => ({
      name,
      expect,
      ...(finding === undefined ? {} : { finding }),
      run: () => typed(h, make),
    });
    const reaction = (name: string, expect: string, key: string): Case => ({
      name,
      expect,
      run: () => reacted(h, key),
    });
    const nothing = 'answered, nothing changed';
    const cases: Case[] = [
      text('control: "approve N" approves', 'approved', (n) => `approve ${n}`),
      text(
        'control: "APPROVE N 1,2 8H" (ASCII case) approves',
        'approved',
        (n) => `APPROVE ${n} 1,2 8H`,
      ),
      text('homoglyph verb: Greek omicron in "apprοve N"', nothing, (n) => `appr\u03BFve ${n}`),
      text('homoglyph verb: Cyrillic "dеny N"', nothing, (n) => `d\u0435ny ${n}`),
      text(
        'homoglyph verb: small capitals "ᴀᴘᴘʀᴏᴠᴇ N"',
        'ignored',
        (n) => `\u1D00\u1D18\u1D18\u0280\u1D0F\u1D20\u1D07 ${n}`,
      ),
      text(
        'homoglyph verb: mathematical bold "𝐚𝐩𝐩𝐫𝐨𝐯𝐞 N"',
        'ignored',
        (n) => `\u{1D41A}\u{1D429}\u{1D429}\u{1D42B}\u{1D428}\u{1D42F}\u{1D41E} ${n}`,
      ),
      text('invisible: WORD JOINER after the verb', nothing, (n) => `approve\u2060 ${n}`),
      text('invisible: trailing LEFT-TO-RIGHT MARK', nothing, (n) => `approve ${n}\u200E`),
      text(
        'invisible: the command wrapped in a bidi isolate (chatter: nothing granted)',
        'ignored',
        (n) => `\u2066approve ${n}\u2069`,
      ),
      text('invisible: SOFT HYPHEN inside the number', nothing, (n) => `approve ${n}\u00AD`),
      text('IDEOGRAPHIC SPACE between verb and number', nothing, (n) => `approve\u3000${n}`),
      text('NUL after the number', nothing, (n) => `approve ${n}\u0000`),
      text('Devanagari digits for N', nothing, (n) => `approve ${digits(n, 0x966)}`),
      text('mathematical bold digits for N', nothing, (n) => `approve ${digits(n, 0x1d7ce)}`),
      text('superscript-free look-alike: circled digit ①', nothing, () => 'approve \u2460'),
      text(
        'multi-line: "approve N" then CR LF "revoke all"',
        nothing,
        (n) => `approve ${n}\r\nrevoke all`,
      ),
      text(
        'multi-line: NEXT LINE (U+0085) before a second command',
        nothing,
        (n) => `deny ${n}\u0085approve ${n}`,
      ),
      text(
        'LINE SEPARATOR before a second command',
        nothing,
        (n) => `revoke all\u2028approve ${n}`,
      ),
      text('huge request number 9007199254740993', nothing, () => 'approve 9007199254740993'),
      text(
        'huge item number 1,9007199254740993',
        nothing,
        (n) => `approve ${n} 1,9007199254740993`,
      ),
      text(
        'largest safe expiry "104249991d" (far above max_grant)',
        nothing,
        (n) => `approve ${n} 104249991d`,
      ),
      text('expiry in exponent form "1e3s"', nothing, (n) => `approve ${n} 1e3s`),
      text('expiry "0h"', nothing, (n) => `approve ${n} 0h`),
      text('items "1,2,1" (a repeat)', nothing, (n) => `approve ${n} 1,2,1`),
      text('item 3 of a two-item request', nothing, (n) => `approve ${n} 3`),
      text('emoji as the verb: "👍 N"', 'ignored', (n) => `\u{1F44D} ${n}`),
      text('emoji as the argument: "approve 👍"', nothing, () => 'approve \u{1F44D}'),
      text('a reply fallback that survived: "> approve N"', 'ignored', (n) => `> approve ${n}`),
      reaction('reaction 👍 + ZERO WIDTH JOINER', 'ignored', '\u{1F44D}\u200D'),
      reaction('reaction 👍👍 (two thumbs)', 'ignored', '\u{1F44D}\u{1F44D}'),
      reaction('reaction 👍 + tag character', 'ignored', '\u{1F44D}\u{E0067}'),
      reaction('reaction 👍 + COMBINING ENCLOSING KEYCAP', 'ignored', '\u{1F44D}\u20E3'),
      reaction('reaction 🖒 (REVERSED THUMBS UP)', 'ignored', '\u{1F592}'),
      reaction('reaction "👍 " (trailing space)', 'ignored', '\u{1F44D} '),
      reaction(
        'reaction 👍🏿🏿 (two skin tones: normalised away by design)',
        'approved',
        '\u{1F44D}\u{1F3FF}\u{1F3FF}',
      ),
      reaction(
        'reaction VS16 before 👍 (normalised away by design)',
        'approved',
        '\uFE0F\u{1F44D}',
      ),
      reaction('reaction 👎︎ (text presentation) denies', 'denied', '\u{1F44E}\uFE0E'),
      reaction(
        'reaction 🛇 on a pending request revokes nothing, decides nothing',
        nothing,
        '\u{1F6C7}',
      ),
    ];
    return { cases, teardown: () => h.close() };
  },
};
