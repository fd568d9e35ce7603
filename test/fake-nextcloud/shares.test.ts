/**
 * The fake's received shares, as Nextcloud 29 answered them (docs/nextcloud-behaviour.md,
 * "Recognising a received share" and "Deleting in a received share"); the differential
 * cases hold the same against the real server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { dav, davUrl } from './helpers.js';

const PROPS =
  '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">' +
  '<d:prop><oc:permissions/><nc:mount-type/><nc:is-mount-root/><oc:owner-id/></d:prop></d:propfind>';

let fake: FakeNextcloud;
beforeAll(async () => {
  fake = await startFakeNextcloud();
});
afterAll(async () => {
  await fake.close();
});

async function props(path: string): Promise<Record<string, string>> {
  const res = await dav(fake, 'PROPFIND', path, { headers: { Depth: '0' }, body: PROPS });
  const text = await res.text();
  const get = (tag: string) => new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(text)?.[1] ?? '';
  return {
    permissions: get('oc:permissions'),
    mountType: get('nc:mount-type'),
    root: get('nc:is-mount-root'),
    owner: get('oc:owner-id'),
  };
}

describe('a received share', () => {
  beforeAll(async () => {
    await fake.writeFile('BobShared/inner.txt', 'from bob');
    await fake.mkdir('BobShared/sub');
    await fake.receiveShare('BobShared', { owner: 'bob' });
    await fake.writeFile('Mine/own.txt', 'mine');
  });

  it('its root is a mount of type shared, owned by the sharer; what is inside too, not a root', async () => {
    expect(await props('BobShared')).toEqual({
      permissions: 'SRGDNVCK',
      mountType: 'shared',
      root: 'true',
      owner: 'bob',
    });
    expect(await props('BobShared/inner.txt')).toEqual({
      permissions: 'SRGDNVW',
      mountType: 'shared',
      root: 'false',
      owner: 'bob',
    });
    expect(await props('BobShared/sub')).toMatchObject({ permissions: 'SRGDNVCK', root: 'false' });
  });

  it('the user’s own items and home are no mount', async () => {
    expect(await props('Mine/own.txt')).toEqual({
      permissions: 'RGDNVW',
      mountType: '',
      root: 'false',
      owner: fake.user,
    });
    expect((await props('')).root).toBe('false');
  });

  it('a file inside goes to the trash bin; the root is unshared: gone, and in no trash bin', async () => {
    expect((await dav(fake, 'DELETE', 'BobShared/inner.txt')).status).toBe(204);
    expect(fake.trashed()).toContain('BobShared/inner.txt');
    expect((await dav(fake, 'DELETE', 'BobShared')).status).toBe(204);
    expect(await fake.exists('BobShared')).toBe(false);
    expect(fake.trashed()).not.toContain('BobShared');
  });

  it('a deleted folder goes to the trash bin without the share inside it', async () => {
    await fake.writeFile('Work/Bob2/x.txt', 'from bob');
    await fake.writeFile('Work/mine.txt', 'mine');
    await fake.receiveShare('Work/Bob2');
    expect((await dav(fake, 'DELETE', 'Work')).status).toBe(204);
    expect(fake.trashed()).toContain('Work');
    expect(fake.trashed()).not.toContain('Work/Bob2');
  });

  it('moves like a folder of one’s own (the share follows), but not into another share (403)', async () => {
    await fake.writeFile('Three/x.txt', 'from bob');
    await fake.writeFile('Four/y.txt', 'from bob');
    await fake.mkdir('Into');
    await fake.receiveShare('Three');
    await fake.receiveShare('Four');
    const move = (from: string, to: string) =>
      dav(fake, 'MOVE', from, { headers: { Destination: davUrl(fake, to), Overwrite: 'F' } });
    expect((await move('Three', 'Into/Three')).status).toBe(201);
    expect((await props('Into/Three')).root).toBe('true');
    expect((await move('Into/Three', 'Four/Three')).status).toBe(403);
    expect(await fake.exists('Into/Three/x.txt')).toBe(true);
  });
});
