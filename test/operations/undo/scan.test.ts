/**
 * Which operations an undo takes back, read from audit records (broker/operations/undo/
 * scan.ts): pure, so the rules are held record by record. Attack-named where a wrong
 * read would take back what the owner did not ask for, and a property for the request
 * rule (every changing operation under the request's grants, newest first, no other).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UndoScan, type UndoTarget } from '../../../broker/operations/undo/scan.js';

type Rec = Record<string, unknown>;

/** An operation's two lines, as the pipeline writes them. */
function op(
  seq: number,
  tool: string,
  grants: number[],
  outcome: Rec = {},
  correlation = `c${seq}`,
): Rec[] {
  return [
    {
      seq,
      event: 'intent',
      tool,
      surface: 'agent',
      instance: 'personal',
      correlation_id: correlation,
      grants,
    },
    {
      seq: seq + 1,
      event: 'outcome',
      tool,
      surface: 'agent',
      instance: 'personal',
      correlation_id: correlation,
      outcome: 'ok',
      ...outcome,
    },
  ];
}

const made = (path: string): Rec => ({
  path,
  effect: { kind: 'created', what: 'folder', file_id: '7' },
});

/** Request 1 owns grants 1 and 2, request 2 grant 3. */
const requestOf = (grant: number): number | undefined =>
  grant === 1 || grant === 2 ? 1 : grant === 3 ? 2 : undefined;

function scan(target: UndoTarget, records: Rec[]) {
  const s = new UndoScan(target, requestOf);
  for (const r of records) s.add(r);
  return s.result();
}

describe('undo SEQ', () => {
  it('takes the operation whose outcome or intent line SEQ is', () => {
    const records = [...op(1, 'mkdir', [1], made('A'))];
    for (const seq of [1, 2]) {
      const found = scan({ seq }, records);
      expect(found).toMatchObject({
        ok: true,
        operations: [{ seq: 2, change: { kind: 'folder' } }],
      });
    }
  });

  it('attack: a ticket’s record names the upload that used that ticket, not one beside it', () => {
    const upload = (seq: number, ticket: string, id: string): Rec => ({
      seq,
      event: 'intent',
      tool: 'blob_put',
      surface: 'transfer',
      instance: 'personal',
      correlation_id: id,
      grants: [1],
      kind: 'write',
      ticket_call: ticket,
    });
    const done = (seq: number, id: string, outcome = 'ok'): Rec => ({
      ...op(seq - 1, 'blob_put', [1], { path: 'A/x' }, id)[1],
      outcome,
    });
    const records = [
      ...op(1, 'write', [1], { path: 'A/x' }),
      upload(3, 'another call', 'u1'),
      upload(4, 'c1', 'u2'),
      done(5, 'u1'),
      done(6, 'u2'),
    ];
    for (const seq of [1, 2])
      expect(scan({ seq }, records)).toMatchObject({
        ok: true,
        operations: [{ seq: 2, tool: 'write', upload: { seq: 6, outcome: 'ok' } }],
      });
    // One that ended without changing anything; one with no outcome; none at all.
    expect(scan({ seq: 1 }, [...records.slice(0, 4), done(6, 'u2', 'refused')])).toMatchObject({
      ok: true,
      operations: [{ upload: { seq: 6, outcome: 'refused' } }],
    });
    expect(scan({ seq: 1 }, records.slice(0, 4))).toMatchObject({
      ok: true,
      operations: [{ upload: { seq: 4 } }],
    });
    expect(scan({ seq: 1 }, records.slice(0, 3))).toMatchObject({
      ok: true,
      operations: [{ upload: null }],
    });
    // Under --request a ticket changed nothing and is not listed.
    expect(scan({ request: 1 }, records)).toMatchObject({
      ok: true,
      operations: [{ tool: 'blob_put' }, { tool: 'blob_put' }],
    });
  });

  it('refuses a seq the log does not have, and a line that is no operation', () => {
    const records: Rec[] = [
      { seq: 1, event: 'start', version: '1' },
      ...op(2, 'mkdir', [1], made('A')),
    ];
    expect(scan({ seq: 9 }, records)).toEqual({ ok: false, problem: 'no_such_seq' });
    expect(scan({ seq: 1 }, records)).toEqual({
      ok: false,
      problem: 'not_operation',
      event: 'start',
    });
  });

  it('lists an operation that changed nothing as such (a list, a refused push)', () => {
    const list = op(1, 'list', [1], { entries: 3 });
    const refusedPush = op(3, 'blob_put', [1], { outcome: 'refused', code: 'conflict' });
    expect(scan({ seq: 2 }, [...list, ...refusedPush])).toMatchObject({
      ok: true,
      operations: [{ change: { kind: 'none' } }],
    });
    expect(scan({ seq: 4 }, [...list, ...refusedPush])).toMatchObject({
      ok: true,
      operations: [{ change: { kind: 'none' } }],
    });
  });
});

describe('attack: a line written before undo existed', () => {
  it('a push, move or mkdir without `effect` is named as unrecorded, never guessed from its path', () => {
    for (const tool of ['blob_put', 'move', 'mkdir', 'calendar_create_event', 'checkout']) {
      expect(scan({ seq: 2 }, op(1, tool, [1], { path: 'A/x' }))).toMatchObject({
        ok: true,
        operations: [{ change: { kind: 'unrecorded' } }],
      });
    }
  });

  it('a trash without its `trash` record is unrecorded too', () => {
    expect(scan({ seq: 2 }, op(1, 'trash', [1], { path: 'A/x' }))).toMatchObject({
      ok: true,
      operations: [{ change: { kind: 'unrecorded' } }],
    });
  });

  it('an effect of another tool (a forged or confused line) is not taken as this tool’s', () => {
    // A blob_put line that says it made a folder: not what a push does.
    expect(scan({ seq: 2 }, op(1, 'blob_put', [1], made('A')))).toMatchObject({
      ok: true,
      operations: [{ change: { kind: 'unrecorded' } }],
    });
  });
});

describe('a trash that failed after its rename', () => {
  it('left renamed or unconfirmed: undo may still bring it back; renamed back: nothing to do', () => {
    const trash = (state: string) => ({
      outcome: 'error',
      trash: { state, original: 'A/x', renamed: 'A/x (trashed abcdefgh)' },
    });
    for (const state of ['left_renamed', 'unconfirmed'])
      expect(scan({ seq: 2 }, op(1, 'trash', [1], trash(state)))).toMatchObject({
        ok: true,
        operations: [{ change: { kind: 'trash' } }],
      });
    expect(scan({ seq: 2 }, op(1, 'trash', [1], trash('renamed_back')))).toMatchObject({
      ok: true,
      operations: [{ change: { kind: 'none' } }],
    });
  });
});

describe('already undone', () => {
  it('an undo outcome line that took it back marks it; a dry run or one left as it was does not', () => {
    const records = [
      ...op(1, 'mkdir', [1], made('A')),
      { seq: 3, event: 'undo', stage: 'outcome', undoes: 2, result: 'would_undo', dry_run: true },
      { seq: 4, event: 'undo', stage: 'outcome', undoes: 2, result: 'changed_since' },
    ];
    expect(scan({ seq: 2 }, records)).toMatchObject({ ok: true, operations: [{ seq: 2 }] });
    expect(scan({ seq: 2 }, records).ok && scan({ seq: 2 }, records)).not.toMatchObject({
      operations: [{ undoneAt: expect.anything() }],
    });
    records.push({ seq: 5, event: 'undo', stage: 'outcome', undoes: 2, result: 'undone' });
    expect(scan({ seq: 2 }, records)).toMatchObject({ ok: true, operations: [{ undoneAt: 5 }] });
  });
});

describe('attack: undo --request N reaches only what request N allowed', () => {
  it('an operation under another request’s grant is not taken, a read is not listed', () => {
    const records = [
      ...op(1, 'mkdir', [1], made('A')),
      ...op(3, 'mkdir', [3], made('B')),
      ...op(5, 'list', [2], { entries: 1 }),
      ...op(7, 'mkdir', [2, 3], made('C')),
    ];
    const found = scan({ request: 1 }, records);
    expect(found.ok && found.operations.map((o) => o.path)).toEqual(['C', 'A']);
  });

  it('property: exactly the changing operations relying on a grant of N, newest first', () => {
    const tool = fc.constantFrom('mkdir', 'list', 'search');
    const grants = fc.uniqueArray(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 3 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(tool, grants), { maxLength: 12 }),
        fc.constantFrom(1, 2),
        (ops, n) => {
          const records = ops.flatMap(([t, g], i) => op(2 * i + 1, t, g, made(`P${i}`)));
          const found = scan({ request: n }, records);
          const want = ops
            .map(([t, g], i) => ({ t, g, seq: 2 * i + 2 }))
            .filter(({ t, g }) => t === 'mkdir' && g.some((x) => requestOf(x) === n))
            .map(({ seq }) => seq)
            .reverse();
          expect(found.ok && found.operations.map((o) => o.seq)).toEqual(want);
        },
      ),
    );
  });
});
