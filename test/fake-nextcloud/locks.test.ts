/** Facts file, "## Locks (files_lock app)": one test per statement. */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import {
  dav,
  davUrl,
  LOCKINFO,
  PROPFIND_BODY,
  propstat,
  responses,
  sabreException,
} from './helpers.js';

let fake: FakeNextcloud;
let n = 0;
let file: string;

beforeEach(async () => {
  fake ??= await startFakeNextcloud();
  fake.reset();
  file = `l${++n}/doc.txt`;
  await fake.writeFile(file, 'original');
});
afterAll(async () => {
  await fake.close();
});

async function tokenLock(path = file, timeout = 'Second-600'): Promise<Response> {
  return dav(fake, 'LOCK', path, { headers: { Timeout: timeout }, body: LOCKINFO });
}

function tokenOf(res: Response): string {
  return (res.headers.get('lock-token') ?? '').replace(/^<|>$/g, '');
}

describe('A user lock (LOCK with X-User-Lock: 1, no body)', () => {
  it('is 200 with a <d:prop> of nc:lock properties and no Lock-Token header', async () => {
    const res = await dav(fake, 'LOCK', file, { headers: { 'X-User-Lock': '1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('lock-token')).toBeNull();
    const body = await res.text();
    expect(body).toMatch(/^<\?xml[^>]*>\s*<d:prop /);
    expect(body).toContain('<nc:lock>1</nc:lock>');
    expect(body).toContain('<nc:lock-owner-type>0</nc:lock-owner-type>');
    expect(body).toContain(`<nc:lock-owner>${fake.user}</nc:lock-owner>`);
    expect(body).toMatch(/<nc:lock-time>\d+<\/nc:lock-time>/);
    // Observed: 34 shows a lock without timeout as -60 (29: 0, test/fake-nextcloud/series.test.ts).
    expect(body).toContain('<nc:lock-timeout>-60</nc:lock-timeout>');
    expect(body).toMatch(/<nc:lock-token>files_lock\/[0-9a-f-]{36}<\/nc:lock-token>/);
  });

  it('lets its owner still write without any token', async () => {
    await dav(fake, 'LOCK', file, { headers: { 'X-User-Lock': '1' } });
    expect((await dav(fake, 'PUT', file, { body: 'mine' })).status).toBe(204);
  });

  it('gives other users 423', async () => {
    await fake.lockAs(file, { type: 'user', owner: 'bob' });
    const put = await dav(fake, 'PUT', file, { body: 'x' });
    expect(put.status).toBe(423);
    expect((await dav(fake, 'DELETE', file)).status).toBe(423);
    expect((await fake.readFile(file))?.toString()).toBe('original');
  });

  it('shows in PROPFIND as nc:lock properties in the 200 propstat', async () => {
    await dav(fake, 'LOCK', file, { headers: { 'X-User-Lock': '1' } });
    const res = await dav(fake, 'PROPFIND', file, { headers: { Depth: '0' }, body: PROPFIND_BODY });
    const ok = propstat(responses(await res.text())[0]?.xml ?? '', 200);
    expect(ok).toContain('<nc:lock>1</nc:lock>');
    expect(ok).toContain(`<nc:lock-owner>${fake.user}</nc:lock-owner>`);
  });
});

describe('A token lock (RFC 4918 LOCK with a lockinfo body, Timeout: Second-N)', () => {
  it('is 200 with a Lock-Token: <opaquelocktoken:…> header and a full lockdiscovery', async () => {
    const res = await tokenLock();
    expect(res.status).toBe(200);
    const token = tokenOf(res);
    expect(token).toMatch(/^opaquelocktoken:[0-9a-f-]{36}$/);
    const body = await res.text();
    expect(body).toContain('<d:lockdiscovery><d:activelock>');
    expect(body).toContain('<d:lockscope><d:exclusive/></d:lockscope>');
    expect(body).toContain('<d:locktype><d:write/></d:locktype>');
    expect(body).toContain('<d:timeout>Second-600</d:timeout>');
    expect(body).toContain(`<d:locktoken><d:href>${token}</d:href></d:locktoken>`);
    expect(body).toContain(
      `<d:lockroot><d:href>/remote.php/dav/files/${fake.user}/${file}</d:href>`,
    );
  });

  it("any PUT/MOVE/DELETE without the token gets 423, even from the lock's own user", async () => {
    await tokenLock();
    const put = await dav(fake, 'PUT', file, { body: 'x' });
    expect(put.status).toBe(423);
    expect(sabreException(await put.text())).toBe('Sabre\\DAV\\Exception\\Locked');
    const move = await dav(fake, 'MOVE', file, {
      headers: { Destination: davUrl(fake, `${file}.moved`), Overwrite: 'F' },
    });
    expect(move.status).toBe(423);
    expect((await dav(fake, 'DELETE', file)).status).toBe(423);
    expect((await fake.readFile(file))?.toString()).toBe('original');
  });

  it('with If: (<token>) the write succeeds', async () => {
    const token = tokenOf(await tokenLock());
    const put = await dav(fake, 'PUT', file, {
      headers: { If: `(<${token}>)` },
      body: 'checked in',
    });
    expect(put.status).toBe(204);
    expect((await fake.readFile(file))?.toString()).toBe('checked in');
    const move = await dav(fake, 'MOVE', file, {
      headers: { Destination: davUrl(fake, `${file}.moved`), Overwrite: 'F', If: `(<${token}>)` },
    });
    expect(move.status).toBe(201);
    // The lock follows the file (files_lock keys locks by file id).
    expect(fake.lockOf(`${file}.moved`)?.token).toBe(token);
    expect(
      (await dav(fake, 'DELETE', `${file}.moved`, { headers: { If: `(<${token}>)` } })).status,
    ).toBe(204);
  });

  it('also succeeds for another user holding the token', async () => {
    const token = await fake.lockAs(file, { type: 'token', owner: 'bob' });
    expect((await dav(fake, 'PUT', file, { body: 'no token' })).status).toBe(423);
    const put = await dav(fake, 'PUT', file, {
      headers: { If: `(<${token}>)` },
      body: 'with token',
    });
    expect(put.status).toBe(204);
  });

  it("a token that is not the lock's: 423 while the file is locked, 412 once it is not", async () => {
    const token = tokenOf(await tokenLock());
    const wrong = { If: '(<opaquelocktoken:00000000-0000-0000-0000-000000000000>)' };
    const put = await dav(fake, 'PUT', file, { headers: wrong, body: 'x' });
    expect(put.status).toBe(423);
    const unlock = await dav(fake, 'UNLOCK', file, { headers: { 'Lock-Token': `<${token}>` } });
    expect(unlock.status).toBe(204);
    expect((await dav(fake, 'PUT', file, { headers: wrong, body: 'x' })).status).toBe(412);
  });

  it('a second exclusive LOCK is 423', async () => {
    expect((await tokenLock()).status).toBe(200);
    const second = await tokenLock();
    expect(second.status).toBe(423);
    expect(second.headers.get('lock-token')).toBeNull();
  });

  it('a refresh with If: is 200', async () => {
    const token = tokenOf(await tokenLock());
    const refresh = await dav(fake, 'LOCK', file, {
      headers: { If: `(<${token}>)`, Timeout: 'Second-1200' },
    });
    expect(refresh.status).toBe(200);
    expect(await refresh.text()).toContain('<d:timeout>Second-1200</d:timeout>');
    expect(fake.lockOf(file)?.token).toBe(token);
  });

  it('UNLOCK with Lock-Token: <…> is 204 and writes work again', async () => {
    const token = tokenOf(await tokenLock());
    const res = await dav(fake, 'UNLOCK', file, { headers: { 'Lock-Token': `<${token}>` } });
    expect(res.status).toBe(204);
    expect(fake.lockOf(file)).toBeUndefined();
    expect((await dav(fake, 'PUT', file, { body: 'free' })).status).toBe(204);
  });

  it('UNLOCK without the header is 400', async () => {
    await tokenLock();
    const res = await dav(fake, 'UNLOCK', file);
    expect(res.status).toBe(400);
    expect(fake.lockOf(file)).toBeDefined();
  });

  it('UNLOCK with a wrong token is 500 with an empty body', async () => {
    await tokenLock();
    const res = await dav(fake, 'UNLOCK', file, {
      headers: { 'Lock-Token': '<opaquelocktoken:00000000-0000-0000-0000-000000000000>' },
    });
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('');
    expect(fake.lockOf(file)).toBeDefined();
  });
});

describe('Caveats', () => {
  it('an RFC LOCK on a missing path creates an empty file (201)', async () => {
    const path = file.replace('doc.txt', 'new.txt');
    const res = await tokenLock(path);
    expect(res.status).toBe(201);
    expect(res.headers.get('lock-token')).toMatch(/^<opaquelocktoken:/);
    expect((await fake.readFile(path))?.length).toBe(0);
  });

  it('a lock on a folder does not protect the files in it', async () => {
    const folder = file.split('/')[0] ?? '';
    expect((await tokenLock(folder)).status).toBe(200);
    expect((await dav(fake, 'PUT', file, { body: 'inside' })).status).toBe(204);
  });

  it('locks do not expire on their own (expiry needs background jobs)', async () => {
    let clock = Date.UTC(2026, 0, 1);
    const timed = await startFakeNextcloud({ now: () => clock });
    try {
      await timed.writeFile('a.txt', 'a');
      const res = await dav(timed, 'LOCK', 'a.txt', {
        headers: { Timeout: 'Second-1' },
        body: LOCKINFO,
      });
      clock += 3_600_000;
      expect(timed.lockOf('a.txt')?.token).toBe(tokenOf(res));
      expect((await dav(timed, 'PUT', 'a.txt', { body: 'x' })).status).toBe(423);
    } finally {
      await timed.close();
    }
  });
});

describe('files_lock disabled', () => {
  it('LOCK answers 501 Not Implemented (not 405)', async () => {
    fake.faults.filesLock = false;
    const res = await tokenLock();
    expect(res.status).toBe(501);
    expect(sabreException(await res.text())).toBe('Sabre\\DAV\\Exception\\NotImplemented');
    expect((await dav(fake, 'LOCK', file, { headers: { 'X-User-Lock': '1' } })).status).toBe(501);
  });

  it('Allow and the DAV header lose LOCK / 2', async () => {
    const on = await dav(fake, 'OPTIONS', '');
    expect(on.headers.get('dav')).toMatch(/(^|, )2(,|$)/);
    expect(on.headers.get('allow')).toContain('LOCK');
    fake.faults.filesLock = false;
    const off = await dav(fake, 'OPTIONS', '');
    expect(off.headers.get('dav')).not.toMatch(/(^|, )2(,|$)/);
    expect(off.headers.get('dav')).toContain('1');
    expect(off.headers.get('allow')).not.toContain('LOCK');
  });
});

describe('OCS lock API: PUT/DELETE /ocs/v2.php/apps/files_lock/lock/{fileId}', () => {
  async function fileId(): Promise<string> {
    const res = await dav(fake, 'PROPFIND', file, { headers: { Depth: '0' }, body: PROPFIND_BODY });
    return /<oc:fileid>(\d+)<\/oc:fileid>/.exec(await res.text())?.[1] ?? '';
  }
  const auth = () => 'Basic ' + Buffer.from(`${fake.user}:${fake.password}`).toString('base64');

  it('locks and unlocks with OCS-APIRequest: true', async () => {
    const url = `${fake.url}/ocs/v2.php/apps/files_lock/lock/${await fileId()}?format=json`;
    const headers = { Authorization: auth(), 'OCS-APIRequest': 'true' };
    const locked = await fetch(url, { method: 'PUT', headers });
    expect(locked.status).toBe(200);
    expect(fake.lockOf(file)?.type).toBe('user');
    const unlocked = await fetch(url, { method: 'DELETE', headers });
    expect(unlocked.status).toBe(200);
    expect(fake.lockOf(file)).toBeUndefined();
  });

  it('without OCS-APIRequest is 412 (CSRF)', async () => {
    const url = `${fake.url}/ocs/v2.php/apps/files_lock/lock/${await fileId()}?format=json`;
    const res = await fetch(url, { method: 'PUT', headers: { Authorization: auth() } });
    expect(res.status).toBe(412);
    expect(fake.lockOf(file)).toBeUndefined();
  });

  it('capabilities: files.locking "1.0" and files.api-feature-lock-type while files_lock is on', async () => {
    const get = async () => {
      const res = await fetch(`${fake.url}/ocs/v2.php/cloud/capabilities?format=json`, {
        headers: { Authorization: auth(), 'OCS-APIRequest': 'true' },
      });
      return (
        (await res.json()) as {
          ocs: { data: { capabilities: { files: Record<string, unknown> } } };
        }
      ).ocs.data.capabilities.files;
    };
    const on = await get();
    expect(on.locking).toBe('1.0');
    expect(on['api-feature-lock-type']).toBe(true);
    fake.faults.filesLock = false;
    const off = await get();
    expect(off.locking).toBeUndefined();
    expect(off['api-feature-lock-type']).toBeUndefined();
  });
});
