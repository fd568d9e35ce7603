/**
 * The walk behind `broker fetch --recursive` (cli/client/transfer/folder-walk.ts), against a
 * stand-in for the broker's `list` tool: every page and subfolder is followed, and a
 * tree that cannot be mirrored locally is refused whole, naming each problem.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TransferClient } from '../../../cli/client/transfer/broker-client.js';
import { MAX_RECURSIVE_FILES, walkFolder } from '../../../cli/client/transfer/folder-walk.js';
import { parseTarget } from '../../../cli/client/transfer/target.js';
import { tempStage } from '../../../support/processes.js';

type Entry = { name: string; kind: 'file' | 'folder'; size?: number };

/** A `list` that answers `tree[path]` in pages of `pageSize`, recording each call. */
function lister(tree: Record<string, Entry[]>, pageSize = 2) {
  const calls: { path: string; cursor?: string }[] = [];
  const client = {
    call: (tool: string, args: { path: string; cursor?: string }) => {
      expect(tool).toBe('list');
      calls.push(args);
      const all = tree[args.path] ?? [];
      const from = Number(args.cursor ?? 0);
      const entries = all
        .slice(from, from + pageSize)
        .map((e) => ({ ...e, path: `${args.path}/${e.name}` }));
      const next = from + pageSize < all.length ? String(from + pageSize) : undefined;
      return Promise.resolve({ status: 'ok', message: '', entries, ...(next ? { next } : {}) });
    },
  };
  return { client: client as unknown as TransferClient, calls };
}

const file = (name: string, size = 1): Entry => ({ name, kind: 'file', size });
const folder = (name: string): Entry => ({ name, kind: 'folder' });

describe('walkFolder', () => {
  it('follows every page and subfolder, and mirrors each file under LOCAL', async () => {
    const { client, calls } = lister({
      Docs: [folder('a'), file('1.txt'), file('2.txt', 5), file('3.txt')],
      'Docs/a': [file('x.md', 7)],
    });
    const local = join(tempStage('walk'), 'copy');
    const found = await walkFolder(client, parseTarget('personal:Docs'), {
      local,
      stageRoot: tempStage('walk-stage'),
    });
    expect(found.map((f) => [f.target.path, f.local, f.size])).toEqual([
      ['Docs/1.txt', join(local, '1.txt'), 1],
      ['Docs/2.txt', join(local, '2.txt'), 5],
      ['Docs/3.txt', join(local, '3.txt'), 1],
      ['Docs/a/x.md', join(local, 'a/x.md'), 7],
    ]);
    expect(calls).toEqual([
      { instance: 'personal', path: 'Docs' },
      { instance: 'personal', path: 'Docs', cursor: '2' },
      { instance: 'personal', path: 'Docs/a' },
    ]);
  });

  it('without LOCAL each file is staged at its own place', async () => {
    const { client } = lister({ Docs: [file('1.txt')] });
    const [one] = await walkFolder(client, parseTarget('personal:Docs'), {
      local: undefined,
      stageRoot: tempStage('walk-staged'),
    });
    expect(one?.local).toBeUndefined();
  });

  it('refuses, before anything is fetched, names that are one local path and names the wall refuses', async () => {
    const { client } = lister({
      Docs: [file('Caf\u00e9.txt'), file('Cafe\u0301.txt'), file('bell\u0007.txt'), file('ok.txt')],
    });
    await expect(
      walkFolder(client, parseTarget('personal:Docs'), {
        local: undefined,
        stageRoot: tempStage('walk-clash'),
      }),
    ).rejects.toMatchObject({
      exitCode: 1,
      message: expect.stringMatching(
        /cannot mirror personal:Docs locally \(2 problems; nothing was fetched\): personal:Docs\/Cafe\u0301\.txt and personal:Docs\/Caf\u00e9\.txt are the same local path; personal:Docs\/bell.\.txt: path refused/,
      ) as unknown,
    });
  });

  it('refuses a local folder where a remote file must go', async () => {
    const stageRoot = tempStage('walk-kind');
    mkdirSync(join(stageRoot, 'personal/Docs/1.txt'), { recursive: true });
    const { client } = lister({ Docs: [file('1.txt')] });
    await expect(
      walkFolder(client, parseTarget('personal:Docs'), { local: undefined, stageRoot }),
    ).rejects.toThrow(
      /personal:Docs\/1\.txt: a file on Nextcloud, but .*\/1\.txt is a local folder/,
    );
  });

  it(`refuses a tree of more than ${MAX_RECURSIVE_FILES} files`, async () => {
    const many = Array.from({ length: MAX_RECURSIVE_FILES + 1 }, (_, i) => file(`f${i}`));
    const { client } = lister({ Docs: many }, 1000);
    await expect(
      walkFolder(client, parseTarget('personal:Docs'), {
        local: undefined,
        stageRoot: tempStage('walk-many'),
      }),
    ).rejects.toThrow(/holds more than 5000 files; nothing was fetched/);
  });
});
