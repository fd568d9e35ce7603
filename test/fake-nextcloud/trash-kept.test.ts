/**
 * A fake Nextcloud given a trash folder keeps its trash bin there: after a restart the
 * trashed item is still listed and can be restored, as on a real server. (The demo keeps
 * its trash under ./data, so its "the owner can restore it" stays true after Ctrl-C.)
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeNextcloud } from '../../fakes/nextcloud.js';
import { basic, dav, responses } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'fake-trash-kept-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('trashDir', () => {
  it('a trashed file survives a restart and is restored in place', async () => {
    const opts = { root: join(dir, 'files'), trashDir: join(dir, 'trash'), password: 'pw' };
    const first = await startFakeNextcloud(opts);
    await first.writeFile('Docs/notes.txt', 'keep me');
    expect((await dav(first, 'DELETE', 'Docs/notes.txt')).status).toBe(204);
    await first.close();
    expect(readdirSync(join(dir, 'trash', 'files'))).toHaveLength(1);

    const second = await startFakeNextcloud(opts);
    try {
      expect(second.trashed()).toEqual(['Docs/notes.txt']);
      const base = `${second.url}/remote.php/dav/trashbin/${second.user}`;
      const auth = basic(second.user, second.password);
      const list = await fetch(`${base}/trash/`, {
        method: 'PROPFIND',
        headers: { Authorization: auth, Depth: '1' },
      });
      const item = responses(await list.text()).find((r) => r.href.includes('notes.txt.d'));
      const id = item?.href.split('/').pop() ?? '';
      const restore = await fetch(`${base}/trash/${id}`, {
        method: 'MOVE',
        headers: { Authorization: auth, Destination: `${base}/restore/${id}` },
      });
      expect(restore.status).toBe(201);
      expect((await second.readFile('Docs/notes.txt'))?.toString()).toBe('keep me');
      expect(second.trashed()).toEqual([]);
      expect(readdirSync(join(dir, 'trash', 'info'))).toEqual([]);
    } finally {
      await second.close();
    }
  });

  it('an item restored by hand while stopped is no longer listed', async () => {
    const opts = { root: join(dir, 'files'), trashDir: join(dir, 'trash') };
    const first = await startFakeNextcloud(opts);
    await first.writeFile('a.txt', 'x');
    await dav(first, 'DELETE', 'a.txt');
    await first.close();
    const [id] = readdirSync(join(dir, 'trash', 'files'));
    rmSync(join(dir, 'trash', 'files', id ?? ''), { force: true });
    const second = await startFakeNextcloud(opts);
    try {
      expect(second.trashed()).toEqual([]);
    } finally {
      await second.close();
    }
  });
});
