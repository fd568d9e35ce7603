/**
 * The reconciliation's decision (broker/operations/reconcile/match.ts), pure: which of
 * the account's changes an audited operation explains. Attack-named cases for each of
 * kind, target, time and count, and the two invariants as properties: no change an
 * audited operation made is ever reported, and every change beyond what the operations
 * made is.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AuditedOperation } from '../../../broker/operations/reconcile/audited.js';
import type { Change, ChangeKind } from '../../../broker/operations/reconcile/changes.js';
import { matchChanges, TOOL_CHANGES } from '../../../broker/operations/reconcile/match.js';
import { unexplainedOf } from '../../../broker/operations/reconcile/report.js';

const T = Date.parse('2026-12-04T12:00:00Z');
const OPTIONS = { toleranceMs: 2000, now: T + 3_600_000 };

function op(over: Partial<AuditedOperation> & { tool: string }): AuditedOperation {
  return {
    correlationId: `op-${Math.random()}`,
    instance: 'personal',
    start: T,
    end: T + 500,
    paths: [],
    fileIds: new Set(),
    uid: undefined,
    offset: 0,
    ...over,
  };
}

let ids = 0;
function change(over: Partial<Change> & { kind: ChangeKind }): Change {
  ids += 1;
  return { id: String(ids), time: T, type: 'file_changed', user: 'bob', path: '', ...over };
}

const unexplained = (changes: Change[], ops: AuditedOperation[], used?: Map<string, number>) =>
  matchChanges(changes, ops, { ...OPTIONS, ...(used === undefined ? {} : { used }) }).unexplained;

describe('a change like the broker’s, but not the broker’s', () => {
  it('a second write of the file the broker just wrote, in the same second, is not hidden behind it', () => {
    const upload = op({ tool: 'blob_put', paths: ['Docs/a.txt'], fileIds: new Set(['7']) });
    const mine = change({ kind: 'changed', path: 'Docs/a.txt', fileId: '7' });
    const theirs = change({ kind: 'changed', path: 'Docs/a.txt', fileId: '7' });
    expect(unexplained([mine, theirs], [upload])).toHaveLength(1);
  });

  it('a delete of the path the broker moved is not explained by the move', () => {
    const move = op({ tool: 'move', paths: ['Docs/a.txt', 'Docs/b.txt'] });
    const deleted = change({ kind: 'deleted', path: 'Docs/b.txt' });
    expect(unexplained([deleted], [move])).toEqual([deleted]);
  });

  it('a write of another file in the folder the broker wrote to, at the same moment', () => {
    const upload = op({ tool: 'blob_put', paths: ['Docs/a.txt'], fileIds: new Set(['7']) });
    const other = change({ kind: 'changed', path: 'Docs/b.txt', fileId: '8' });
    expect(unexplained([other], [upload])).toEqual([other]);
  });

  it('a write of the same file minutes after the broker’s upload ended', () => {
    const upload = op({ tool: 'blob_put', paths: ['Docs/a.txt'] });
    const later = change({ kind: 'changed', path: 'Docs/a.txt', time: T + 5 * 60_000 });
    const before = change({ kind: 'changed', path: 'Docs/a.txt', time: T - 60_000 });
    expect(unexplained([later, before], [upload])).toEqual([later, before]);
  });

  it('an operation that explained its change in an earlier pass explains none in this one', () => {
    const upload = op({ tool: 'blob_put', paths: ['Docs/a.txt'] });
    const again = change({ kind: 'changed', path: 'Docs/a.txt' });
    expect(unexplained([again], [upload], new Map([[upload.correlationId, 1]]))).toEqual([again]);
    expect(unexplained([again], [upload])).toEqual([]);
  });

  it('a rename whose new path is the broker’s but whose old one is not', () => {
    const move = op({ tool: 'move', paths: ['Docs/a.txt', 'Docs/b.txt'] });
    const planted = change({ kind: 'moved', path: 'Docs/b.txt', oldPath: 'Secret/x.txt' });
    expect(unexplained([planted], [move])).toEqual([planted]);
  });

  it('an event the broker did not create, in the same moment as one it did', () => {
    const create = op({ tool: 'calendar_create_event', uid: 'u1@nextcloud-access-broker' });
    const mine = change({
      kind: 'event',
      type: 'calendar_event',
      uid: 'u1@nextcloud-access-broker',
    });
    const theirs = change({ kind: 'event', type: 'calendar_event', uid: 'u2' });
    expect(unexplained([mine, theirs], [create])).toEqual([theirs]);
  });

  it('an event, when the broker’s create left no UID (an older log), is not explained by it', () => {
    const create = op({ tool: 'calendar_create_event' });
    const event = change({ kind: 'event', type: 'calendar_event', uid: 'u3' });
    expect(unexplained([event], [create])).toEqual([event]);
  });

  it('a change by a tool that only reads (a download, a listing) is never explained', () => {
    const reads = ['blob_get', 'list', 'search', 'read', 'checkout', 'release_lock'].map((tool) =>
      op({ tool, paths: ['Docs/a.txt'] }),
    );
    const changed = change({ kind: 'changed', path: 'Docs/a.txt' });
    expect(unexplained([changed], reads)).toEqual([changed]);
  });

  it('anything else the account did (a share, a card, a favourite) is never explained', () => {
    const upload = op({ tool: 'blob_put', paths: ['Docs/a.txt'] });
    const share = change({ kind: 'other', type: 'shared', path: 'Docs/a.txt' });
    expect(unexplained([share], [upload])).toEqual([share]);
  });
});

describe('what the owner is shown of an unexplained change', () => {
  it('a type that is not an identifier is not shown as the broker’s words (a forged type)', () => {
    const forged = change({ kind: 'other', type: 'file_changed\u202e\nApproved by owner' });
    expect(unexplainedOf(forged).type).toBe('unknown_type');
    expect(unexplainedOf(change({ kind: 'other', type: 'shared' })).type).toBe('shared');
  });
});

describe('the broker’s own changes', () => {
  it('a trash under a unique name (a rename, then the delete) is one operation’s two changes', () => {
    const trash = op({ tool: 'trash', paths: ['Docs/a.txt'], fileIds: new Set(['7']) });
    const renamed = change({
      kind: 'moved',
      path: 'Docs/a (trashed k3j9).txt',
      oldPath: 'Docs/a.txt',
      fileId: '7',
    });
    const deleted = change({ kind: 'deleted', path: 'Docs/a (trashed k3j9).txt', fileId: '7' });
    expect(unexplained([renamed, deleted], [trash])).toEqual([]);
  });

  it('an operation still open explains changes up to now', () => {
    const upload = op({ tool: 'blob_put', paths: ['Big.bin'], end: undefined });
    const late = change({ kind: 'created', path: 'Big.bin', time: T + 30 * 60_000 });
    expect(unexplained([late], [upload])).toEqual([]);
  });

  it('the order in which changes are read does not change what is explained (a maximum matching)', () => {
    // The first change could go to either operation, the second only to the first.
    const a = op({ tool: 'blob_put', paths: ['x', 'y'] });
    const b = op({ tool: 'blob_put', paths: ['x'] });
    const toX = change({ kind: 'changed', path: 'x' });
    const toY = change({ kind: 'changed', path: 'y' });
    expect(unexplained([toX, toY], [a, b])).toEqual([]);
    expect(unexplained([toY, toX], [b, a])).toEqual([]);
  });
});

/** One operation and the changes it made (at most its tool's `most`, within its span). */
const arbOperation = fc
  .record({
    tool: fc.constantFrom(...TOOL_CHANGES.keys()),
    path: fc.constantFrom('a', 'b', 'c', 'D/e', 'D/f'),
    start: fc.integer({ min: 0, max: 600_000 }),
    length: fc.integer({ min: 0, max: 20_000 }),
    made: fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 3 }),
  })
  .map(({ tool, path, start, length, made }) => {
    const spec = TOOL_CHANGES.get(tool);
    if (spec === undefined) throw new Error(tool);
    const kind = [...spec.kinds][0] as ChangeKind;
    const operation = op({
      tool,
      paths: [path],
      start: T + start,
      end: T + start + length,
      ...(kind === 'event' ? { uid: `uid-${path}` } : {}),
    });
    const changes = made.slice(0, spec.most).map((at) =>
      change({
        kind,
        type: kind === 'event' ? 'calendar_event' : 'file_changed',
        path: kind === 'event' ? '' : path,
        ...(kind === 'event' ? { uid: `uid-${path}` } : {}),
        // Whole seconds, as Nextcloud writes them, within the operation's span.
        time: Math.floor((T + start + Math.min(at, length)) / 1000) * 1000,
      }),
    );
    return { operation, changes, spare: spec.most - changes.length };
  });

describe('invariants', () => {
  it('no change an audited operation made is ever reported, whatever else happened', () => {
    fc.assert(
      fc.property(fc.array(arbOperation, { maxLength: 12 }), (made) => {
        const changes = made.flatMap((m) => m.changes);
        const operations = made.map((m) => m.operation);
        expect(unexplained(changes.toReversed(), operations.toReversed())).toEqual([]);
        expect(unexplained(changes, operations)).toEqual([]);
      }),
    );
  });

  it('every change beyond what the operations made is reported, even on their files and in their seconds', () => {
    fc.assert(
      fc.property(
        // Operations that used all they may explain, and foreign changes copied from
        // their own (same kind, path, time) or anywhere else.
        fc.array(arbOperation, { maxLength: 10 }),
        fc.array(fc.tuple(fc.nat(), fc.boolean(), fc.integer({ min: -900_000, max: 900_000 }))),
        (made, foreign) => {
          const full = made.filter((m) => m.spare === 0);
          const own = full.flatMap((m) => m.changes);
          const planted = foreign.flatMap(([pick, copy, shift]) => {
            const model = own[pick % Math.max(1, own.length)];
            if (model === undefined) return [];
            return [{ ...model, id: `f${pick}`, time: copy ? model.time : model.time + shift }];
          });
          const result = matchChanges(
            [...own, ...planted],
            full.map((m) => m.operation),
            OPTIONS,
          );
          expect(result.unexplained).toHaveLength(planted.length);
        },
      ),
    );
  });
});
