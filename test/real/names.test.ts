/**
 * Names on the real server: Nextcloud stores NFC; the broker canonicalises every path to
 * NFC, so an agent spelling a name in NFD reaches the same file, creates NFC names, and
 * can never trigger the NFC/NFD move that would trash the source. Reserved characters
 * and long names round-trip exactly.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { useRealRig } from './rig.js';
import { call } from '../../support/mcp.js';

const rig = useRealRig();
const sha = (b: string): string => createHash('sha256').update(b).digest('hex');

const FOLDER = 'R\u00e9sum\u00e9';
const FILE = 'Caf\u00e9.txt';
const nfd = (s: string): string => s.normalize('NFD');

describe('NFC and NFD', () => {
  it('a grant asked for in NFD covers the NFC folder; listing and fetch reach the NFC file', async () => {
    await rig.owner.writeFile(`${FOLDER}/${FILE}`, 'caf\u00e9 au lait');
    await rig.broker.grant([{ path: nfd(FOLDER), mode: 'write' }]);
    const listed = await call(rig.agent, 'list', { instance: 'personal', path: nfd(FOLDER) });
    expect(listed.status).toBe('ok');
    expect((listed.entries as { name: string }[]).map((e) => e.name)).toEqual([FILE]);
    const stage = rig.stage();
    const run = await rig.cli(['fetch', `personal:${nfd(FOLDER)}/${nfd(FILE)}`], stage);
    expect(run.code).toBe(ExitCode.ok);
    expect(run.json.sha256).toBe(sha('caf\u00e9 au lait'));
  });

  it('a push under an NFD name creates the NFC name on the server, once', async () => {
    await rig.owner.mkdirs('Nfd');
    await rig.broker.grant([{ path: 'Nfd', mode: 'write' }]);
    const stage = rig.stage();
    const src = join(stage, 'local.txt');
    writeFileSync(src, 'new');
    const run = await rig.cli(['push', `personal:Nfd/${nfd(FILE)}`, src], stage);
    expect(run.code).toBe(ExitCode.ok);
    expect(await rig.owner.list('Nfd')).toEqual([FILE]);
    // The same name in NFC is that file: from a stage that never saw it, a push is a
    // create and is refused as a clobber.
    const other = rig.stage();
    const src2 = join(other, 'other.txt');
    writeFileSync(src2, 'other');
    const again = await rig.cli(['push', `personal:Nfd/${FILE}`, src2], other);
    expect(again.code).toBe(ExitCode.clobber);
    expect(await rig.owner.read(`Nfd/${FILE}`)).toBe('new');
  });

  it('a move between the NFC and NFD spellings of one name is refused; the source stays', async () => {
    await rig.owner.writeFile(`Mv/${FILE}`, 'stay');
    await rig.broker.grant([{ path: 'Mv', mode: 'write' }]);
    const answer = await call(rig.agent, 'move', {
      instance: 'personal',
      from: `Mv/${FILE}`,
      to: `Mv/${nfd(FILE)}`,
    });
    expect(answer.status).toBe('refused');
    expect(await rig.owner.read(`Mv/${FILE}`)).toBe('stay');
    expect(await rig.owner.trash()).toEqual([]);
  });
});

describe('other names', () => {
  it('+, :, spaces, brackets, emoji and a 220-byte name round-trip exactly', async () => {
    const names = ['a+b.txt', 'c:d.txt', 'e f (1) [2].txt', '\u{1F600} smile.txt', 'n'.repeat(220)];
    for (const name of names) await rig.owner.writeFile(`Odd/${name}`, name);
    await rig.broker.grant([{ path: 'Odd', mode: 'read' }]);
    const listed = await call(rig.agent, 'list', { instance: 'personal', path: 'Odd' });
    expect((listed.entries as { name: string }[]).map((e) => e.name).sort()).toEqual(
      [...names].sort(),
    );
    for (const name of names) {
      const run = await rig.cli(['fetch', `personal:Odd/${name}`], rig.stage());
      expect(run.code, name).toBe(ExitCode.ok);
      expect(run.json.sha256).toBe(sha(name));
    }
  });

  it('names the server cannot take are refused before anything is sent', async () => {
    await rig.owner.mkdirs('Long');
    await rig.broker.grant([{ path: 'Long', mode: 'write' }]);
    for (const name of ['x'.repeat(221), 'y.part', '.htaccess']) {
      const answer = await call(rig.agent, 'mkdir', { instance: 'personal', path: `Long/${name}` });
      expect(answer, name).toMatchObject({ status: 'refused', code: 'invalid_path' });
    }
    expect(await rig.owner.list('Long')).toEqual([]);
  });
});
