/**
 * The wall's kind rules: a grant covers its own kind only, and a calendar or address
 * book grant exactly the one collection it names (one component). Attack-named suites
 * for each way around them, and properties over generated grants and names.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GrantView, Kind } from '../../broker/base/domain.js';
import { decide, type WallOp } from '../../broker/wall.js';

const NOW = 1_000_000;
const ON = { discovery: false };
const DISCOVERY = { discovery: true };

function grant(
  kind: Kind,
  path: string,
  mode: 'read' | 'write' = 'read',
  over: Partial<GrantView> = {},
): GrantView {
  return Object.freeze({
    id: 1,
    requestId: 1,
    instance: 'personal',
    kind,
    path,
    mode,
    expiresAt: NOW + 1000,
    ...over,
  });
}

const calendar = (name: unknown, access: 'read' | 'create' = 'read'): WallOp => ({
  op: 'collection',
  instance: 'personal',
  kind: 'calendar',
  name,
  access,
});
const contacts = (name: unknown, access: 'read' | 'create' = 'read'): WallOp => ({
  op: 'collection',
  instance: 'personal',
  kind: 'contacts',
  name,
  access,
});

describe('attack: a calendar grant used for files', () => {
  it('does not let a calendar grant on "personal" read the folder "personal"', () => {
    const grants = [grant('calendar', 'personal', 'write')];
    for (const op of ['read', 'write', 'list'] as const)
      expect(decide({ op, instance: 'personal', path: 'personal' }, grants, ON, NOW)).toMatchObject(
        {
          ok: false,
          code: 'no_grant',
        },
      );
    expect(
      decide(
        { op: 'move', instance: 'personal', from: 'personal/a', to: 'personal/b' },
        grants,
        ON,
        NOW,
      ).ok,
    ).toBe(false);
  });
});

describe('attack: a files grant used for a calendar or address book', () => {
  it('does not let a files grant on "personal" read or write the calendar "personal"', () => {
    const grants = [grant('files', 'personal', 'write')];
    expect(decide(calendar('personal'), grants, ON, NOW)).toMatchObject({
      ok: false,
      code: 'no_grant',
    });
    expect(decide(calendar('personal', 'create'), grants, ON, NOW).ok).toBe(false);
    expect(decide(contacts('personal'), grants, ON, NOW).ok).toBe(false);
  });

  it('treats a grant view without a kind (made before kinds) as files, never as a collection', () => {
    const legacy = [
      Object.freeze({
        id: 1,
        requestId: 1,
        instance: 'personal',
        path: 'personal',
        mode: 'read' as const,
        expiresAt: NOW + 1,
      }),
    ];
    expect(decide({ op: 'read', instance: 'personal', path: 'personal' }, legacy, ON, NOW).ok).toBe(
      true,
    );
    expect(decide(calendar('personal'), legacy, ON, NOW).ok).toBe(false);
  });

  it('does not let a calendar grant read the address book of the same name', () => {
    expect(decide(contacts('personal'), [grant('calendar', 'personal')], ON, NOW).ok).toBe(false);
  });
});

describe('attack: a collection name with a "/"', () => {
  it.each(['personal/x.ics', 'personal/', '/personal/x', '../personal', 'a/../personal'])(
    'refuses %j',
    (name) => {
      const d = decide(calendar(name), [grant('calendar', 'personal', 'write')], ON, NOW);
      expect(d).toMatchObject({ ok: false, code: 'invalid_path' });
    },
  );

  it('refuses an address book name with a "/" the same way', () => {
    const d = decide(contacts('contacts/x.vcf'), [grant('contacts', 'contacts')], ON, NOW);
    expect(d).toMatchObject({ ok: false, code: 'invalid_path' });
    expect(d.ok || d.reason).toMatch(/^addressbook: .*one component/);
  });

  it('accepts one leading "/" and drops it, as for paths', () => {
    expect(decide(calendar('/personal'), [grant('calendar', 'personal')], ON, NOW)).toMatchObject({
      ok: true,
      paths: ['personal'],
    });
  });

  it.each([42, null, undefined, '', '.', 'per\u200Bsonal', 'personal%2Fx', 'personal\u2215x'])(
    'refuses a name that is not one clean component (%j)',
    (name) => {
      expect(decide(calendar(name), [grant('calendar', 'personal')], ON, NOW)).toMatchObject({
        ok: false,
        code: 'invalid_path',
      });
    },
  );
});

describe('attack: a generated address book named by its display name', () => {
  it('does not let a grant on "Accounts" search z-server-generated--system', () => {
    const grants = [grant('contacts', 'Accounts')];
    expect(decide(contacts('z-server-generated--system'), grants, ON, NOW).ok).toBe(false);
    expect(decide(contacts('Accounts'), grants, ON, NOW)).toMatchObject({
      ok: true,
      paths: ['Accounts'],
    });
  });

  it('lets the owner grant the generated book by its name', () => {
    const grants = [grant('contacts', 'z-server-generated--system')];
    expect(decide(contacts('z-server-generated--system'), grants, ON, NOW).ok).toBe(true);
  });
});

describe('attack: the wrong collection', () => {
  it('covers exactly the named calendar, never one it is a prefix of, nor a case variant', () => {
    const grants = [grant('calendar', 'personal', 'write')];
    for (const name of ['personal_shared_by_bob', 'personal2', 'Personal', 'persona'])
      expect(decide(calendar(name), grants, ON, NOW).ok, name).toBe(false);
  });
});

describe('attack: create through a read grant, or in an address book', () => {
  it('needs write on the calendar to create in it', () => {
    expect(
      decide(calendar('personal', 'create'), [grant('calendar', 'personal', 'read')], ON, NOW),
    ).toMatchObject({
      ok: false,
      code: 'no_grant',
    });
    expect(
      decide(calendar('personal', 'create'), [grant('calendar', 'personal', 'write')], ON, NOW).ok,
    ).toBe(true);
  });

  it('never creates in an address book, whatever the grant says', () => {
    const d = decide(
      contacts('contacts', 'create'),
      [grant('contacts', 'contacts', 'write')],
      ON,
      NOW,
    );
    expect(d).toMatchObject({ ok: false, code: 'no_grant' });
    expect(d.ok || d.reason).toMatch(/read only/);
  });
});

describe('attack: an expired or revoked collection grant', () => {
  it('refuses at the instant of expiry and names the end', () => {
    const grants = [grant('calendar', 'personal', 'read', { expiresAt: NOW })];
    const d = decide(calendar('personal'), grants, ON, NOW);
    expect(d).toMatchObject({ ok: false, code: 'grant_expired' });
    expect(d.ok || d.reason).toMatch(/expired at/);
  });

  it('names a revoked calendar grant as revoked, and a revoked files grant does not count', () => {
    const ended = [
      { ...grant('calendar', 'personal'), state: 'revoked' as const, endedAt: NOW - 5 },
    ];
    expect(decide(calendar('personal'), [], ON, NOW, ended)).toMatchObject({
      code: 'grant_revoked',
    });
    const filesEnded = [
      { ...grant('files', 'personal'), state: 'revoked' as const, endedAt: NOW - 5 },
    ];
    expect(decide(calendar('personal'), [], ON, NOW, filesEnded)).toMatchObject({
      code: 'no_grant',
    });
  });
});

describe('attack: an unknown kind', () => {
  it('refuses a collection operation of a kind the wall does not know', () => {
    const op = {
      op: 'collection',
      instance: 'personal',
      kind: 'deck',
      name: 'board',
      access: 'read',
    } as unknown as WallOp;
    expect(decide(op, [grant('files', 'board')], DISCOVERY, NOW)).toMatchObject({
      ok: false,
      code: 'no_grant',
    });
    const list = { op: 'collections', instance: 'personal', kind: 'deck' } as unknown as WallOp;
    expect(decide(list, [], DISCOVERY, NOW)).toMatchObject({ ok: false, code: 'no_grant' });
  });

  it('lets a grant of an unknown kind cover nothing', () => {
    const odd = [grant('deck' as Kind, 'personal')];
    expect(decide(calendar('personal'), odd, ON, NOW).ok).toBe(false);
    expect(decide({ op: 'read', instance: 'personal', path: 'personal' }, odd, ON, NOW).ok).toBe(
      false,
    );
  });
});

describe('listing collections', () => {
  const list = (kind: 'calendar' | 'contacts'): WallOp => ({
    op: 'collections',
    instance: 'personal',
    kind,
  });

  it('lists every name under discovery', () => {
    expect(decide(list('calendar'), [], DISCOVERY, NOW)).toEqual({
      ok: true,
      paths: [],
      grantIds: [],
      discovery: true,
    });
  });

  it('lists only the live granted names of that kind without discovery', () => {
    const grants = [
      grant('calendar', 'work', 'read', { id: 3 }),
      grant('calendar', 'personal', 'write', { id: 2 }),
      grant('calendar', 'personal', 'read', { id: 5 }),
      grant('calendar', 'old', 'read', { id: 4, expiresAt: NOW }),
      grant('calendar', 'other', 'read', { id: 6, instance: 'elsewhere' }),
      grant('files', 'Documents', 'read', { id: 7 }),
      grant('contacts', 'contacts', 'read', { id: 8 }),
    ];
    expect(decide(list('calendar'), grants, ON, NOW)).toEqual({
      ok: true,
      paths: ['personal', 'work'],
      grantIds: [2, 3],
      discovery: false,
    });
  });

  it('refuses without discovery or a grant of the kind, saying how to get one', () => {
    const d = decide(list('contacts'), [grant('calendar', 'personal')], ON, NOW);
    expect(d).toMatchObject({ ok: false, code: 'no_grant' });
    expect(d.ok || d.reason).toMatch(/request read access/);
  });
});

describe('properties', () => {
  const kinds = fc.constantFrom<Kind>('files', 'calendar', 'contacts');
  const name = fc.stringMatching(/^[a-z][a-z0-9_-]{0,12}$/);

  it('a collection grant allows exactly its kind and its name', () => {
    fc.assert(
      fc.property(
        kinds,
        name,
        fc.constantFrom<'calendar' | 'contacts'>('calendar', 'contacts'),
        name,
        (gk, gn, ok, on) => {
          const d = decide(calendarOrContacts(ok, on), [grant(gk, gn, 'write')], ON, NOW);
          expect(d.ok).toBe(gk === ok && gn === on);
        },
      ),
    );
  });

  it('no collection grant ever allows a files operation', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<Kind>('calendar', 'contacts'),
        name,
        fc.constantFrom('read', 'write', 'list') as fc.Arbitrary<'read' | 'write' | 'list'>,
        fc.array(name, { minLength: 0, maxLength: 3 }),
        (gk, gn, op, rest) => {
          const path = [gn, ...rest].join('/');
          const d = decide({ op, instance: 'personal', path }, [grant(gk, gn, 'write')], ON, NOW);
          expect(d.ok).toBe(false);
        },
      ),
    );
  });
});

function calendarOrContacts(kind: 'calendar' | 'contacts', n: string): WallOp {
  return kind === 'calendar' ? calendar(n) : contacts(n);
}
