/**
 * Properties of `undo --request N` over any session of an agent (fast-check, on the
 * fake Nextcloud through the whole daemon): whatever the agent did (new files, replaced
 * files, new folders, moves, trashes, in any order, one file touched many times), undo
 * never destroys (every content ever written, the owner's and the agent's, is still
 * kept: a file, a version, or a trash bin item) and, with nobody else changing the
 * files, it takes every operation back and leaves the owner's tree as it was.
 *
 * Nextcloud names versions by the mtime second, and an overwrite in the second of the
 * content it replaces keeps no version of it (docs/nextcloud-behaviour.md): that loss is
 * Nextcloud's and the agent's push's, not undo's, so each replacement here comes in a
 * second of its own.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextSecond } from '../../../fakes/nextcloud.js';
import { push, replace } from '../../../support/agent-writes.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { call } from '../../../support/mcp.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

type Act =
  | { kind: 'create'; content: string }
  | { kind: 'replace'; pick: number; content: string }
  | { kind: 'mkdir' }
  | { kind: 'move'; pick: number }
  | { kind: 'trash'; pick: number };

const content = fc.stringMatching(/^[a-z]{1,12}$/);
const act: fc.Arbitrary<Act> = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), content }),
  fc.record({ kind: fc.constant('replace' as const), pick: fc.nat(), content }),
  fc.record({ kind: fc.constant('mkdir' as const) }),
  fc.record({ kind: fc.constant('move' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('trash' as const), pick: fc.nat() }),
);

let broker: Broker;
let agent: Client;
let transfer: Client;
let run = 0;

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
  transfer = await broker.transfer();
});
afterAll(async () => {
  await broker.close();
});

/** Every file (with its content) and folder (`/`) below `dir` of the fake's disk. */
async function tree(dir: string, rel = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of await readdir(join(dir, rel))) {
    const at = rel === '' ? name : `${rel}/${name}`;
    if ((await stat(join(dir, at))).isDirectory()) {
      out[`${at}/`] = '';
      Object.assign(out, await tree(dir, at));
    } else out[at] = await readFile(join(dir, at), 'utf8');
  }
  return out;
}

/** The agent's session: `acts` on a folder of the owner's (its files tracked as it goes). */
async function session(root: string, acts: readonly Act[]): Promise<string[]> {
  const files = [`${root}/a.txt`, `${root}/b.txt`];
  const written: string[] = [];
  let n = 0;
  const fresh = (ext: string): string => `${root}/n${n++}${ext}`;
  for (const a of acts) {
    const pick = 'pick' in a && files.length > 0 ? files[a.pick % files.length] : undefined;
    if (a.kind === 'create') {
      const path = fresh('.txt');
      await push(broker.url, transfer, path, a.content);
      files.push(path);
      written.push(a.content);
    } else if (a.kind === 'replace' && pick !== undefined) {
      await nextSecond();
      await replace(broker.url, transfer, pick, a.content);
      written.push(a.content);
    } else if (a.kind === 'mkdir') {
      await call(agent, 'mkdir', { instance: 'personal', path: fresh('') });
    } else if (a.kind === 'move' && pick !== undefined) {
      const to = fresh('.txt');
      await call(agent, 'move', { instance: 'personal', from: pick, to });
      files[files.indexOf(pick)] = to;
    } else if (a.kind === 'trash' && pick !== undefined) {
      await call(agent, 'trash', { instance: 'personal', path: pick });
      files.splice(files.indexOf(pick), 1);
    }
  }
  return written;
}

describe('property: undo --request N after any session of the agent', () => {
  it('loses nothing, and with nobody else writing puts the owner’s tree back as it was', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(act, { minLength: 1, maxLength: 6 }), async (acts) => {
        const root = `P${run++}`;
        await broker.fake.writeFile(`${root}/a.txt`, `owner a ${root}`);
        await broker.fake.writeFile(`${root}/b.txt`, `owner b ${root}`);
        const before = await tree(broker.fake.root, root);
        const id = await broker.grant([{ path: root, mode: 'write' }]);
        const written = await session(root, acts);
        const answer = (await broker.gateway.decide(`undo --request ${id}`))?.undo;
        expect(answer?.ok).toBe(true);
        if (answer?.ok !== true) return;
        expect(answer.items.map((i) => [i.tool, i.result, i.reason])).toEqual(
          answer.items.map((i) => [i.tool, 'undone', i.reason]),
        );
        expect(await tree(broker.fake.root, root)).toEqual(before);
        const kept = new Set((await broker.fake.keptContents()).map((b) => b.toString()));
        for (const text of [...Object.values(before), ...written].filter((t) => t !== ''))
          expect(kept, `"${text}" is kept somewhere`).toContain(text);
      }),
      { numRuns: 6 },
    );
    // Each replacement waits for a new second: a long run on a loaded machine.
  }, 300_000);
});
