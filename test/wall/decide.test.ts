/**
 * decide() and covers(): matching, modes, expiry, moves, discovery and hostile grants.
 */
import { describe, expect, it } from 'vitest';
import type { GrantView, Mode } from '../../broker/base/domain.js';
import { covers, decide, type WallOp } from '../../broker/wall.js';
import {
  allowed,
  canonical,
  closed,
  grant,
  list,
  move,
  NOW,
  open,
  read,
  refused,
  search,
  write,
} from './helpers.js';

describe('prefix siblings (Docs2, Docs.bak, Docs-old)', () => {
  const g = grant('Docs', 'write');

  it('covers the granted path and everything below it', () => {
    for (const p of ['Docs', '/Docs', 'Docs/a', 'Docs/a/b/c.txt']) {
      for (const op of [read(p), write(p), list(p)]) {
        expect(allowed(decide(op, [g], closed, NOW)).grantIds).toEqual([g.id]);
      }
    }
  });

  it.each([
    'Docs2',
    'Docs.bak',
    'Docs-old',
    'Docs old',
    'Docs_backup',
    'Docsx/a',
    'Doc',
    'docs',
    'DOCS/a',
  ])('never covers the sibling %j', (p) => {
    for (const op of [read(p), write(p), list(p)]) {
      expect(refused(decide(op, [g], closed, NOW)).code).toBe('no_grant');
    }
    expect(covers('Docs', p.replace(/^\//, ''))).toBe(false);
  });

  it('a grant on A/B covers neither its parent A nor A/BC', () => {
    const ab = grant('A/B');
    expect(refused(decide(read('A'), [ab], closed, NOW)).code).toBe('no_grant');
    expect(refused(decide(read('A/BC'), [ab], closed, NOW)).code).toBe('no_grant');
    expect(refused(decide(read('A/B.bak'), [ab], closed, NOW)).code).toBe('no_grant');
    expect(refused(decide(read('A/C'), [ab], closed, NOW)).code).toBe('no_grant');
    expect(allowed(decide(read('A/B/C'), [ab], closed, NOW)).paths).toEqual(['A/B/C']);
  });

  it('a grant on a fullwidth or NFD spelling is a different path', () => {
    expect(refused(decide(read('\uff24ocs/x'), [g], closed, NOW)).code).toBe('no_grant');
    const cafe = grant('caf\u00e9');
    expect(allowed(decide(read('cafe\u0301/menu'), [cafe], closed, NOW)).paths).toEqual([
      'caf\u00e9/menu',
    ]);
  });

  it('covers() matches whole components of canonical paths only', () => {
    expect(covers('Docs', 'Docs')).toBe(true);
    expect(covers('Docs', 'Docs/x')).toBe(true);
    expect(covers('A/B', 'A/B/C/D')).toBe(true);
    expect(covers('A/B', 'A')).toBe(false);
    expect(covers('Docs', 'Docs2')).toBe(false);
    // Non-canonical arguments never match, whatever their spelling.
    expect(covers('Docs', 'Docs/../Secret')).toBe(false);
    expect(covers('Docs', 'Docs//x')).toBe(false);
    expect(covers('Docs', '/Docs/x')).toBe(false);
    expect(covers('/Docs', 'Docs/x')).toBe(false);
    expect(covers('Docs/', 'Docs/x')).toBe(false);
    expect(covers('', 'x')).toBe(false);
    expect(covers('', '')).toBe(false);
    expect(covers('cafe\u0301', 'cafe\u0301/x')).toBe(false);
  });
});

describe('write vs read', () => {
  const r = grant('Shared', 'read');
  const w = grant('Work', 'write');

  it('read grants read and list, never write', () => {
    expect(allowed(decide(read('Shared/a'), [r], closed, NOW)).grantIds).toEqual([r.id]);
    expect(allowed(decide(list('Shared'), [r], closed, NOW)).discovery).toBe(false);
    const d = refused(decide(write('Shared/a'), [r], closed, NOW));
    expect(d.code).toBe('no_grant');
    expect(d.reason).toMatch(/no active write grant/);
  });

  it('write implies read and list within the same scope', () => {
    expect(allowed(decide(read('Work/a'), [w], closed, NOW)).grantIds).toEqual([w.id]);
    expect(allowed(decide(list('Work'), [w], closed, NOW)).grantIds).toEqual([w.id]);
    expect(allowed(decide(write('Work/a'), [w], closed, NOW)).grantIds).toEqual([w.id]);
  });

  it('write on one path gives nothing on another', () => {
    expect(refused(decide(write('Shared/a'), [r, w], closed, NOW)).code).toBe('no_grant');
    expect(refused(decide(read('Other'), [r, w], closed, NOW)).code).toBe('no_grant');
  });

  it('refuses everything without grants (zero access by default)', () => {
    for (const op of [read('x'), write('x'), list('x'), move('x', 'y')]) {
      expect(refused(decide(op, [], closed, NOW)).code).toBe('no_grant');
    }
  });

  it('reports the grant that expires last, then the lowest id', () => {
    const early = grant('P', 'write', { expiresAt: NOW + 10 });
    const late = grant('P/q', 'read', { expiresAt: NOW + 20 });
    const lateToo = grant('P', 'write', { expiresAt: NOW + 20, id: late.id + 50 });
    const lateLow = grant('P', 'write', { expiresAt: NOW + 20, id: late.id - 50 });
    expect(allowed(decide(read('P/q/r'), [early, late], closed, NOW)).grantIds).toEqual([late.id]);
    expect(allowed(decide(read('P/q/r'), [late, early], closed, NOW)).grantIds).toEqual([late.id]);
    expect(allowed(decide(read('P/q'), [late, lateToo], closed, NOW)).grantIds).toEqual([late.id]);
    expect(allowed(decide(read('P/q'), [late, lateLow], closed, NOW)).grantIds).toEqual([
      lateLow.id,
    ]);
    // A read grant never serves a write, however late it expires.
    expect(allowed(decide(write('P/q'), [late, early], closed, NOW)).grantIds).toEqual([early.id]);
  });
});

describe('expiry boundary now == expires_at', () => {
  const g = grant('Docs', 'write', { expiresAt: NOW });

  it('allows strictly before expiresAt and refuses at and after it, as expired', () => {
    expect(allowed(decide(read('Docs'), [g], closed, NOW - 1)).grantIds).toEqual([g.id]);
    for (const op of [read('Docs'), write('Docs'), list('Docs')]) {
      const d = refused(decide(op, [g], closed, NOW));
      expect(d.code).toBe('grant_expired');
      expect(d.reason).toContain(`expired at ${new Date(NOW).toISOString()}`);
    }
    expect(refused(decide(read('Docs'), [g], closed, NOW + 1)).code).toBe('grant_expired');
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])(
    'fails closed when now is %s, even for discovery',
    (now) => {
      const d = refused(decide(read('Docs'), [g], closed, now));
      expect(d.code).toBe('no_grant');
      expect(d.reason).toMatch(/clock/);
      expect(refused(decide(list(''), [], open, now)).code).toBe('no_grant');
    },
  );

  it('a grant whose expiry is not a finite number covers nothing', () => {
    for (const expiresAt of [
      Number.NaN,
      '9999999999999' as unknown as number,
      null as unknown as number,
    ]) {
      const bad = grant('Docs', 'write', { expiresAt });
      expect(refused(decide(read('Docs'), [bad], closed, NOW)).code).toBe('no_grant');
    }
  });
});

describe('move same canonical (NFC vs NFD)', () => {
  const w = grant('Docs', 'write');

  it('refuses a rename that differs only in normalisation', () => {
    const d = refused(decide(move('Docs/caf\u00e9', 'Docs/cafe\u0301'), [w], closed, NOW));
    expect(d.code).toBe('same_path');
    expect(refused(decide(move('/Docs/x', 'Docs/x'), [w], closed, NOW)).code).toBe('same_path');
    expect(refused(decide(move('Docs/\u212b', 'Docs/\u00c5'), [w], closed, NOW)).code).toBe(
      'same_path',
    );
  });

  it('allows a real rename with write on both ends, naming both grants', () => {
    const out = grant('Out', 'write');
    const d = allowed(decide(move('Docs/a', '/Out/a'), [w, out], closed, NOW));
    expect(d).toEqual({
      ok: true,
      paths: ['Docs/a', 'Out/a'],
      grantIds: [w.id, out.id],
      discovery: false,
    });
    expect(allowed(decide(move('Docs/a', 'Docs/b'), [w], closed, NOW)).grantIds).toEqual([
      w.id,
      w.id,
    ]);
  });

  it('needs write on the source and on the destination', () => {
    const readOnly = grant('Ro', 'read');
    const toRead = refused(decide(move('Docs/a', 'Ro/a'), [w, readOnly], closed, NOW));
    expect(toRead.code).toBe('no_grant');
    expect(toRead.reason).toContain('"Ro/a"');
    const fromRead = refused(decide(move('Ro/a', 'Docs/a'), [w, readOnly], closed, NOW));
    expect(fromRead.code).toBe('no_grant');
    expect(fromRead.reason).toContain('"Ro/a"');
    expect(refused(decide(move('Docs/a', 'Nowhere/a'), [w], closed, NOW)).code).toBe('no_grant');
  });

  it('refuses an invalid end and says which one', () => {
    const badFrom = refused(decide(move('Docs/../x', 'Docs/y'), [w], closed, NOW));
    expect(badFrom.code).toBe('invalid_path');
    expect(badFrom.reason).toMatch(/^from: /);
    const badTo = refused(decide(move('Docs/x', 'Docs/y\u0000'), [w], closed, NOW));
    expect(badTo.code).toBe('invalid_path');
    expect(badTo.reason).toMatch(/^to: /);
    expect(refused(decide(move('Docs/x', ''), [w], closed, NOW)).code).toBe('invalid_path');
  });
});

describe('discovery', () => {
  const g = grant('Docs', 'read');

  it('lists the instance root ("" or "/") only under discovery', () => {
    for (const root of ['', '/']) {
      expect(decide(list(root), [g], open, NOW)).toEqual({
        ok: true,
        paths: [''],
        grantIds: [],
        discovery: true,
      });
      const d = refused(decide(list(root), [g], closed, NOW));
      expect(d.code).toBe('no_grant');
      expect(d.reason).toMatch(/only with discovery/);
    }
  });

  it('lists an ungranted folder by name only, and says so', () => {
    expect(decide(list('Other'), [g], open, NOW)).toEqual({
      ok: true,
      paths: ['Other'],
      grantIds: [],
      discovery: true,
    });
    expect(refused(decide(list('Other'), [g], closed, NOW)).code).toBe('no_grant');
  });

  it('a granted folder is listed on its grant, not as discovery', () => {
    expect(decide(list('Docs/x'), [g], open, NOW)).toEqual({
      ok: true,
      paths: ['Docs/x'],
      grantIds: [g.id],
      discovery: false,
    });
  });

  it('never allows read, write or move', () => {
    expect(refused(decide(read('Other'), [], open, NOW)).code).toBe('no_grant');
    expect(refused(decide(write('Other'), [], open, NOW)).code).toBe('no_grant');
    expect(refused(decide(move('A/x', 'B/x'), [], open, NOW)).code).toBe('no_grant');
    expect(refused(decide(read(''), [], open, NOW)).code).toBe('invalid_path');
  });

  it('does not relax the path rules', () => {
    for (const p of ['//', '../x', 'Docs/../..', 'trashbin', '\u202e', '%2F']) {
      expect(refused(decide(list(p), [g], open, NOW)).code).toBe('invalid_path');
    }
  });

  it('only a literal true enables it', () => {
    const truthy = { discovery: 'yes' as unknown as boolean };
    expect(refused(decide(list(''), [], truthy, NOW)).code).toBe('no_grant');
    expect(refused(decide(list('Other'), [], truthy, NOW)).code).toBe('no_grant');
  });
});

describe('search needs what list needs (read on the folder, or discovery)', () => {
  const docs = grant('Docs', 'read');

  it('a read or write grant on the folder (or above it) allows searching it', () => {
    const w = grant('Work', 'write');
    for (const [op, g] of [
      [search('Docs'), docs],
      [search('/Docs/sub'), docs],
      [search('Work/deep/er'), w],
    ] as const) {
      expect(decide(op, [docs, w], closed, NOW)).toEqual({
        ok: true,
        paths: [canonical(op)],
        grantIds: [g.id],
        discovery: false,
      });
    }
  });

  it('a search scoped to a sibling (Docs2, Docs.bak) or the parent is refused under a Docs grant', () => {
    for (const p of ['Docs2', 'Docs.bak', 'Docs-old', 'Do', 'Other/Docs']) {
      const d = refused(decide(search(p), [docs], closed, NOW));
      expect(d.code).toBe('no_grant');
      expect(d.reason).toContain('read');
    }
  });

  it('an expired grant allows no search (now == expires_at included)', () => {
    const ended = grant('Docs', 'read', { expiresAt: NOW });
    expect(refused(decide(search('Docs'), [ended], closed, NOW)).code).toBe('grant_expired');
    expect(allowed(decide(search('Docs'), [ended], closed, NOW - 1)).grantIds).toEqual([ended.id]);
  });

  it('the instance root is searched only under discovery, and the refusal says so', () => {
    for (const root of ['', '/']) {
      expect(decide(search(root), [docs], open, NOW)).toEqual({
        ok: true,
        paths: [''],
        grantIds: [],
        discovery: true,
      });
      const d = refused(decide(search(root), [docs], closed, NOW));
      expect(d.code).toBe('no_grant');
      expect(d.reason).toMatch(/searched only with discovery/);
    }
  });

  it('discovery searches an ungranted folder by name only; a granted one on its grant', () => {
    expect(allowed(decide(search('Other'), [docs], open, NOW))).toMatchObject({
      grantIds: [],
      discovery: true,
    });
    expect(allowed(decide(search('Docs/x'), [docs], open, NOW))).toMatchObject({
      grantIds: [docs.id],
      discovery: false,
    });
  });

  it('a hostile scope is refused before anything else (the path rules do not relax)', () => {
    for (const p of ['Docs/..', '../Docs', 'Docs//x', 'Docs/', '%2E%2E', 'Docs\\x', 'Do\u200bcs']) {
      expect(refused(decide(search(p), [docs], open, NOW)).code).toBe('invalid_path');
    }
  });
});

describe('unknown instance', () => {
  it('refuses when the instance has no policy, whatever the grants say', () => {
    const g = grant('Docs', 'write', { instance: 'ghost' });
    for (const op of [read('Docs', 'ghost'), write('Docs', 'ghost'), list('', 'ghost')]) {
      const d = refused(decide(op, [g], undefined, NOW));
      expect(d.code).toBe('unknown_instance');
      expect(d.reason).toContain('"ghost"');
    }
  });

  it('escapes a hostile instance name in the reason', () => {
    const d = refused(decide(read('Docs', 'evil\n\u202einstance'), [], undefined, NOW));
    expect(d.reason).not.toMatch(/[\n\u202e]/u);
    expect(d.reason).toContain('\\u{000A}');
  });
});

describe('hostile grants', () => {
  it('grants of another instance never count', () => {
    const other = grant('Docs', 'write', { instance: 'work' });
    const upper = grant('Docs', 'write', { instance: 'Personal' });
    const padded = grant('Docs', 'write', { instance: 'personal ' });
    expect(refused(decide(read('Docs'), [other, upper, padded], closed, NOW)).code).toBe(
      'no_grant',
    );
    expect(allowed(decide(read('Docs', 'work'), [other], closed, NOW)).grantIds).toEqual([
      other.id,
    ]);
  });

  it.each([
    ['leading slash', '/Docs'],
    ['trailing slash', 'Docs/'],
    ['instance root', ''],
    ['bare slash', '/'],
    ['traversal', 'Docs/..'],
    ['NFD', 'cafe\u0301'],
    ['zero width', 'Do\u200bcs'],
    ['percent', 'Docs%2F'],
    ['reserved', 'trashbin'],
  ])('a grant with a non-canonical path (%s) covers nothing', (_name, path) => {
    const g = grant(path, 'write');
    for (const target of ['Docs', 'Docs/x', 'x', 'caf\u00e9', 'caf\u00e9/x', 'a/b']) {
      for (const op of [read(target), write(target), list(target)]) {
        expect(decide(op, [g], closed, NOW).ok).toBe(false);
      }
    }
  });

  it('a grant path that is not a string covers nothing (no coercion)', () => {
    for (const path of [['D'], { toString: () => 'D', length: 1 }, 42, null]) {
      const g = grant(path as unknown as string, 'write');
      expect(refused(decide(read('D/x'), [g], closed, NOW)).code).toBe('no_grant');
    }
  });

  it('a grant that never expires (Infinity, or a non-number) covers nothing', () => {
    for (const expiresAt of [Number.POSITIVE_INFINITY, Number.NaN, '9999999999999', null]) {
      const g = grant('Docs', 'write', { expiresAt: expiresAt as number });
      expect(refused(decide(read('Docs'), [g], closed, NOW)).code).toBe('no_grant');
      expect(
        refused(decide(read('Docs'), Object.freeze([Object.freeze(g)]), closed, NOW)).code,
      ).toBe('no_grant');
    }
  });

  it('a grant with an unknown mode or a non-integer id covers nothing', () => {
    for (const mode of ['admin', 'WRITE', 'Read', '', undefined]) {
      const g = grant('Docs', 'write', { mode: mode as unknown as Mode });
      expect(refused(decide(read('Docs'), [g], closed, NOW)).code).toBe('no_grant');
    }
    for (const id of [Number.NaN, 1.5, '7', Number.MAX_VALUE]) {
      const g = grant('Docs', 'write', { id: id as number });
      expect(refused(decide(read('Docs'), [g], closed, NOW)).code).toBe('no_grant');
    }
  });

  it('skips holes and nulls in the grant list', () => {
    const good = grant('Docs', 'read');
    const list2 = [null, undefined, good] as unknown as GrantView[];
    expect(allowed(decide(read('Docs'), list2, closed, NOW)).grantIds).toEqual([good.id]);
  });

  it('refuses an operation it does not know', () => {
    const g = grant('Docs', 'write');
    const op = { op: 'delete', instance: 'personal', path: 'Docs' } as unknown as WallOp;
    const d = refused(decide(op, [g], closed, NOW));
    expect(d.code).toBe('no_grant');
    expect(d.reason).toMatch(/unknown operation "delete"/);
  });
});
