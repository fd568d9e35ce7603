import { describe, expect, it } from 'vitest';
import { errorForStatus, type StatusContext } from '../../broker/nextcloud/errors.js';

const ctx = (over: Partial<StatusContext> = {}): StatusContext => ({
  verb: 'PROPFIND',
  instance: 'home',
  path: 'Docs/a.txt',
  ...over,
});

describe('status mapping (docs/nextcloud-behaviour.md)', () => {
  it.each([
    [400, ctx(), 'bad_request', false],
    [401, ctx(), 'unauthorized', false],
    [403, ctx(), 'forbidden', false],
    [404, ctx(), 'not_found', false],
    [404, ctx({ verb: 'PUT', write: 'create' }), 'not_found', false],
    [405, ctx({ verb: 'MKCOL' }), 'exists', false],
    [405, ctx({ verb: 'PROPFIND' }), 'unexpected_status', false],
    [409, ctx({ verb: 'MKCOL' }), 'conflict', false],
    [409, ctx({ verb: 'MOVE', to: 'x/y' }), 'conflict', false],
    [412, ctx({ verb: 'PUT', write: 'create' }), 'precondition_failed', false],
    [412, ctx({ verb: 'PUT', write: 'replace' }), 'precondition_failed', false],
    [412, ctx({ verb: 'PUT', write: 'replace_locked' }), 'precondition_failed', false],
    [412, ctx({ verb: 'PUT', write: 'locked' }), 'bad_lock_token', false],
    [412, ctx({ verb: 'MOVE', to: 'b' }), 'destination_exists', false],
    [412, ctx({ verb: 'GET' }), 'precondition_failed', true],
    [416, ctx({ verb: 'GET' }), 'range_not_satisfiable', false],
    [423, ctx({ verb: 'PUT' }), 'locked', true],
    [429, ctx(), 'throttled', true],
    [500, ctx(), 'server_error', true],
    [500, ctx({ verb: 'UNLOCK' }), 'bad_lock_token', false],
    [501, ctx({ verb: 'LOCK' }), 'locking_unavailable', false],
    [501, ctx({ verb: 'GET' }), 'server_error', true],
    [502, ctx(), 'server_error', true],
    [503, ctx(), 'server_error', true],
    [507, ctx({ verb: 'PUT' }), 'insufficient_storage', false],
    [418, ctx(), 'unexpected_status', false],
  ] as const)('%i on %o -> %s (retry %s)', (status, c, code, retry) => {
    const err = errorForStatus(status, c);
    expect(err.code).toBe(code);
    expect(err.retry).toBe(retry);
    expect(err.status).toBe(status);
    expect(err.message).not.toMatch(/[\r\n]/);
    // Cause and next step: a colon separates them in every message.
    expect(err.message).toMatch(/: /);
  });

  it('names the instance and says to re-authenticate on 401', () => {
    expect(errorForStatus(401, ctx()).message).toMatch(/^re-authenticate: .*instance 'home'/);
  });

  it('distinguishes "exists" (create) from "changed since read" (replace) on 412', () => {
    expect(errorForStatus(412, ctx({ verb: 'PUT', write: 'create' })).message).toContain('exists');
    expect(errorForStatus(412, ctx({ verb: 'PUT', write: 'replace' })).message).toContain(
      'changed since it was fetched',
    );
  });

  it('says a PUT 404 means a missing parent folder', () => {
    expect(errorForStatus(404, ctx({ verb: 'PUT' })).message).toContain('parent folder');
  });

  it('says locking needs the files_lock app on LOCK 501', () => {
    expect(errorForStatus(501, ctx({ verb: 'LOCK' })).message).toContain('files_lock');
  });

  it('quotes the server message on errors where it helps', () => {
    expect(errorForStatus(403, ctx({ serverMessage: 'No write permission' })).message).toContain(
      '(Nextcloud: No write permission)',
    );
  });

  describe('next steps name what the agent has: the broker CLI, never the transfer arguments', () => {
    const says = (status: number, c: StatusContext): string => errorForStatus(status, c).message;
    it.each([
      [412, ctx({ verb: 'PUT', write: 'replace' }), '`broker fetch home:Docs/a.txt`'],
      [412, ctx({ verb: 'PUT', write: 'replace' }), '`broker push`'],
      [412, ctx({ verb: 'PUT', write: 'create' }), '`broker fetch home:Docs/a.txt` first'],
      [412, ctx({ verb: 'PUT', write: 'locked' }), '`broker checkout home:Docs/a.txt` again'],
      [
        412,
        ctx({ verb: 'PUT', write: 'replace_locked' }),
        '`broker checkout home:Docs/a.txt` again',
      ],
      [412, ctx({ verb: 'GET' }), '`broker fetch home:Docs/a.txt` again'],
      [501, ctx({ verb: 'LOCK' }), '`broker fetch` and `broker push` instead'],
      [500, ctx({ verb: 'UNLOCK' }), '`broker checkout home:Docs/a.txt` again'],
    ] as const)('%i on %o says %s', (status, c, words) => {
      expect(says(status, c)).toContain(words);
    });

    it('no message names if_match, if_none_match, a lock_token or "read it"', () => {
      for (const status of [400, 403, 404, 405, 409, 412, 416, 423, 429, 500, 501, 507]) {
        for (const verb of ['PROPFIND', 'GET', 'PUT', 'MKCOL', 'MOVE', 'LOCK', 'UNLOCK'] as const) {
          for (const write of [
            undefined,
            'create',
            'replace',
            'replace_locked',
            'locked',
          ] as const) {
            const text = says(status, ctx({ verb, ...(write ? { write } : {}), to: 'b' }));
            expect(text).not.toMatch(/if_match|if_none_match|lock_token|read it/);
          }
        }
      }
    });
  });
});
