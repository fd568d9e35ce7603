import {
  mkdtempSync,
  readFileSync,
  renameSync,
  promises as fs,
  symlinkSync,
  mkdirSync,
  writeFileSync,
  readdirSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { CliError } from '../../../cli/client/transfer/errors.js';
import {
  inspectFolders,
  prepareFolders,
  recheckFolders,
  stageFile,
} from '../../../cli/client/transfer/staging.js';
import { planLocal } from '../../../cli/client/transfer/local-path.js';
import { recordName, StateStore } from '../../../cli/client/transfer/state.js';
import { parseTarget } from '../../../cli/client/transfer/target.js';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'broker-stage-'));
/** A state folder that exists nowhere near the test's paths. */
const STATE = join(tmpdir(), 'broker-stage-test-state-never-created');
const plan = (remote: string, root: string, local?: string) =>
  planLocal(parseTarget(remote), root, STATE, local);
/** Streams `bytes` into the writable `open` gives. */
const write = (bytes: string) => async (open: () => Promise<Writable>) =>
  pipeline(Readable.from([Buffer.from(bytes)]), await open());

async function exitCodeOf(p: Promise<unknown>): Promise<number> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return (err as CliError).exitCode;
}

describe('remote target parsing applies the wall rules', () => {
  it('accepts INSTANCE:PATH and drops one leading slash', () => {
    expect(parseTarget('personal:/Docs/a.txt')).toEqual({
      instance: 'personal',
      path: 'Docs/a.txt',
      components: ['Docs', 'a.txt'],
    });
  });

  it.each([
    ['personal:Docs/../../etc/passwd', ExitCode.refused],
    ['personal://etc/passwd', ExitCode.refused],
    ['personal:Docs/a\u202Etxt.exe', ExitCode.refused],
    ['personal:Docs\\a', ExitCode.refused],
    ['personal:', ExitCode.refused],
    ['Personal:Docs', ExitCode.usage],
    ['no-colon', ExitCode.usage],
    [':Docs', ExitCode.usage],
  ])('traversal and hostile targets: %s → exit %i', (arg, code) => {
    let caught: unknown;
    try {
      parseTarget(arg);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(CliError);
    expect((caught as CliError).exitCode).toBe(code);
  });
});

describe('staging paths stay inside the staging root', () => {
  it('places the default target under <root>/<instance>/<path>', async () => {
    const root = tmp();
    expect(await plan('personal:Docs/a.txt', root)).toEqual({
      root,
      file: join(root, 'personal', 'Docs', 'a.txt'),
    });
  });

  it('an explicit folder receives the remote file name', async () => {
    const dir = tmp();
    expect(await plan('personal:Docs/a.txt', '/unused', dir)).toEqual({
      root: dir,
      file: join(dir, 'a.txt'),
    });
  });

  it('an explicit file path is taken as it is (any local_path printed before)', async () => {
    const dir = tmp();
    const file = join(dir, 'deep', 'copy.txt');
    expect(await plan('personal:Docs/a.txt', '/unused', file)).toEqual({
      root: join(dir, 'deep'),
      file,
    });
  });
});

describe("LOCAL inside the CLI's state folder", () => {
  it('is refused, as written and through a symlink', async () => {
    const state = tmp();
    const elsewhere = tmp();
    symlinkSync(state, join(elsewhere, 'link'));
    for (const local of [join(state, 'x.txt'), `${state}/`, join(elsewhere, 'link', 'x.txt')]) {
      const refused = planLocal(parseTarget('personal:Docs/x.txt'), '/unused', state, local);
      expect(await exitCodeOf(refused)).toBe(ExitCode.usage);
    }
    expect(readdirSync(state)).toEqual([]);
  });
});

describe('symlink attacks on the staging folder', () => {
  it('refuses a symlink planted at a parent folder, before and while creating', async () => {
    const root = tmp();
    const outside = tmp();
    mkdirSync(join(root, 'personal'));
    symlinkSync(outside, join(root, 'personal', 'Docs'));
    const p = await plan('personal:Docs/a.txt', root);
    expect(await exitCodeOf(inspectFolders(p))).toBe(ExitCode.usage);
    expect(await exitCodeOf(prepareFolders(p))).toBe(ExitCode.usage);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('refuses a symlink planted at the target', async () => {
    const root = tmp();
    const outside = join(tmp(), 'victim');
    writeFileSync(outside, 'keep me');
    mkdirSync(join(root, 'personal', 'Docs'), { recursive: true });
    symlinkSync(outside, join(root, 'personal', 'Docs', 'a.txt'));
    const p = await plan('personal:Docs/a.txt', root);
    expect(await exitCodeOf(prepareFolders(p))).toBe(ExitCode.usage);
    expect(await fs.readFile(outside, 'utf8')).toBe('keep me');
  });

  it('refuses a symlink swapped in at the target before the rename', async () => {
    const root = tmp();
    const outside = join(tmp(), 'victim');
    writeFileSync(outside, 'keep me');
    const p = await plan('personal:Docs/a.txt', root);
    const result = stageFile(
      p,
      async (open) => {
        const sink = await open();
        symlinkSync(outside, p.file);
        await pipeline(Readable.from([Buffer.from('payload')]), sink);
      },
      () => undefined,
    );
    expect(await exitCodeOf(result)).toBe(ExitCode.usage);
    expect(await fs.readFile(outside, 'utf8')).toBe('keep me');
    expect(readdirSync(join(root, 'personal', 'Docs'))).toEqual(['a.txt']);
  });
});

describe('a folder swapped for a symlink while the bytes stream', () => {
  it('refuses the rename; nothing lands outside the root', async () => {
    const root = tmp();
    const outside = tmp();
    const p = await plan('personal:Race/a.txt', root);
    const result = stageFile(
      p,
      async (open) => {
        const sink = await open();
        renameSync(join(root, 'personal', 'Race'), join(outside, 'Race'));
        symlinkSync(join(outside, 'Race'), join(root, 'personal', 'Race'));
        await pipeline(Readable.from([Buffer.from('payload')]), sink);
      },
      () => undefined,
    );
    expect(await exitCodeOf(result)).toBe(ExitCode.usage);
    expect(readdirSync(join(outside, 'Race'))).toEqual([]);
  });

  it('refuses a folder replaced by another real folder (same path, other inode)', async () => {
    const root = tmp();
    const p = await plan('personal:Race/a.txt', root);
    const { folder } = await prepareFolders(p);
    renameSync(join(root, 'personal', 'Race'), join(root, 'moved'));
    mkdirSync(join(root, 'personal', 'Race'));
    expect(await exitCodeOf(recheckFolders(p, folder))).toBe(ExitCode.usage);
  });
});

describe('staged bytes land only after verification', () => {
  it('writes through an exclusive 0600 temp file and renames it into place', async () => {
    const root = tmp();
    const p = await plan('personal:a.txt', root);
    let tempMode = 0;
    const { digest } = await stageFile(
      p,
      async (open) => {
        await write('hello')(open);
        const temp = readdirSync(join(root, 'personal')).find((f) => f.endsWith('.broker-tmp'));
        tempMode = statSync(join(root, 'personal', temp ?? 'missing')).mode & 0o777;
      },
      () => undefined,
    );
    expect(tempMode).toBe(0o600);
    expect(digest).toEqual({
      sha256: '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
      size: 5,
    });
    expect(await fs.readFile(p.file, 'utf8')).toBe('hello');
  });

  it('a failed verification removes the temp file and keeps the old copy', async () => {
    const root = tmp();
    const p = await plan('personal:a.txt', root);
    await prepareFolders(p);
    writeFileSync(p.file, 'old');
    const result = stageFile(p, write('corrupt'), () => {
      throw new CliError('verification', 'mismatch', 'retry');
    });
    expect(await exitCodeOf(result)).toBe(ExitCode.verification);
    expect(readdirSync(join(root, 'personal'))).toEqual(['a.txt']);
    expect(await fs.readFile(p.file, 'utf8')).toBe('old');
  });
});

describe('a refused or failed transfer leaves nothing behind', () => {
  it('no folder exists until the bytes are due; a failure removes the ones it made', async () => {
    const stage = tmp();
    const root = join(stage, 'stage');
    const p = await plan('personal:Deep/er/a.txt', root);
    await inspectFolders(p);
    expect(readdirSync(stage)).toEqual([]);
    // The broker refuses before any byte: `open` is never called.
    const refused = stageFile(
      p,
      () => Promise.reject(new CliError('refused', 'no', 'ask')),
      () => {},
    );
    expect(await exitCodeOf(refused)).toBe(ExitCode.refused);
    expect(readdirSync(stage)).toEqual([]);
    // The stream breaks half-way: the temp file and every folder made for it go.
    const cut = stageFile(
      p,
      async (open) => {
        (await open()).write('half');
        throw new CliError('infrastructure', 'cut', 'retry');
      },
      () => {},
    );
    expect(await exitCodeOf(cut)).toBe(ExitCode.infrastructure);
    expect(readdirSync(stage)).toEqual([]);
  });

  it('keeps folders that were there before, and what others put in the new ones', async () => {
    const root = tmp();
    mkdirSync(join(root, 'personal'));
    const p = await plan('personal:Docs/a.txt', root);
    const failed = stageFile(
      p,
      async (open) => {
        await open();
        writeFileSync(join(root, 'personal', 'Docs', 'theirs.txt'), 'not ours');
        throw new CliError('infrastructure', 'cut', 'retry');
      },
      () => {},
    );
    expect(await exitCodeOf(failed)).toBe(ExitCode.infrastructure);
    expect(readdirSync(join(root, 'personal', 'Docs'))).toEqual(['theirs.txt']);
  });

  it('undo removes a new file and its folders, but never a file it replaced', async () => {
    const root = tmp();
    const fresh = await stageFile(await plan('personal:New/a.txt', root), write('x'), () => {});
    await fresh.undo();
    expect(readdirSync(root)).toEqual([]);
    const p = await plan('personal:b.txt', root);
    await prepareFolders(p);
    writeFileSync(p.file, 'old');
    const replaced = await stageFile(p, write('new'), () => {});
    await replaced.undo();
    expect(await fs.readFile(p.file, 'utf8')).toBe('new');
  });
});

describe("the CLI's state", () => {
  const entry = {
    instance: 'personal',
    path: 'Docs/a.txt',
    local_path: '/x/a.txt',
    size: 1,
    sha256: 'a'.repeat(64),
    etag: '"e1"',
    fetched_at: '2026-01-01T00:00:00.000Z',
  };

  it('round-trips a record, written atomically: a private folder, a 0600 file, no temp left', async () => {
    const dir = join(tmp(), 'state');
    const state = new StateStore(dir);
    expect(await state.get('personal', 'Docs/a.txt')).toBeUndefined();
    await state.put(entry);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir)).toEqual([recordName('personal', 'Docs/a.txt')]);
    expect(statSync(join(dir, recordName('personal', 'Docs/a.txt'))).mode & 0o777).toBe(0o600);
    expect(await state.get('personal', 'Docs/a.txt')).toEqual(entry);
    expect(await state.get('personal', 'Docs/b.txt')).toBeUndefined();
  });

  it('names a record with a percent-escape, which the wall refuses in every remote path', () => {
    const name = recordName('personal', 'Docs/a.txt');
    expect(name).toMatch(/^%[0-9a-f]{64}\.json$/);
    expect(() => parseTarget(`personal:Docs/${name}`)).toThrow(CliError);
  });

  it("a record under another file's name, a damaged one, or a symlink is refused, naming it", async () => {
    const dir = join(tmp(), 'state');
    const state = new StateStore(dir);
    await state.put(entry);
    const name = join(dir, recordName('personal', 'Docs/a.txt'));
    const other = join(dir, recordName('personal', 'Docs/b.txt'));
    renameSync(name, other);
    symlinkSync(other, name);
    for (const path of ['Docs/a.txt', 'Docs/b.txt']) {
      const err = await state.get('personal', path).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(CliError);
      expect((err as CliError).exitCode).toBe(ExitCode.usage);
      expect((err as CliError).message).toContain(dir);
    }
  });

  it('keeps a null etag and a lock token as written', async () => {
    const state = new StateStore(join(tmp(), 'state'));
    const locked = { ...entry, etag: null, lock_token: 'opaquelocktoken:1' };
    await state.put(locked);
    expect(await state.get('personal', 'Docs/a.txt')).toEqual(locked);
  });

  it.each([
    ['an unknown field', { note: 'planted' }],
    ['another version', { version: 2 }],
    ['a size that is not a whole number', { size: 1.5 }],
    ['a negative size', { size: -1 }],
    ['a size past the safe integers', { size: 2 ** 53 }],
    ['a sha256 that is not 64 hex digits', { sha256: 'A'.repeat(64) }],
    ['an etag that is neither a string nor null', { etag: 7 }],
    ['a lock token that is not a string', { lock_token: true }],
    ['a missing field', { local_path: undefined }],
  ])('a record with %s is refused as damaged', async (_what, change) => {
    const dir = join(tmp(), 'state');
    const state = new StateStore(dir);
    await state.put(entry);
    const file = join(dir, recordName('personal', 'Docs/a.txt'));
    const record = { ...(JSON.parse(readFileSync(file, 'utf8')) as object), ...change };
    writeFileSync(file, JSON.stringify(record));
    const err = await state.get('personal', 'Docs/a.txt').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).message).toContain('damaged');
  });

  it('a state folder that is a symlink, shared, or open to others is refused', async () => {
    const real = tmp();
    const holder = tmp();
    symlinkSync(real, join(holder, 'state'));
    expect(await exitCodeOf(new StateStore(join(holder, 'state')).check())).toBe(ExitCode.usage);
    const open = tmp();
    await fs.chmod(open, 0o755);
    const refused = new StateStore(open);
    expect(await exitCodeOf(refused.check())).toBe(ExitCode.usage);
    expect(await exitCodeOf(refused.put(entry))).toBe(ExitCode.usage);
    expect(readdirSync(open)).toEqual([]);
  });
});
