import {
  mkdtempSync,
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
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { CliError } from '../../cli/transfer/errors.js';
import { Manifest, MANIFEST_NAME } from '../../cli/transfer/manifest.js';
import {
  planLocal,
  prepareFolders,
  recheckFolders,
  stageFile,
} from '../../cli/transfer/staging.js';
import { parseTarget } from '../../cli/transfer/target.js';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'broker-stage-'));

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
    const plan = await planLocal(parseTarget('personal:Docs/a.txt'), root);
    expect(plan).toEqual({ root, file: join(root, 'personal', 'Docs', 'a.txt') });
  });

  it('an explicit folder receives the remote file name', async () => {
    const dir = tmp();
    const plan = await planLocal(parseTarget('personal:Docs/a.txt'), '/unused', dir);
    expect(plan).toEqual({ root: dir, file: join(dir, 'a.txt') });
  });
});

describe("names that collide with the CLI's own files", () => {
  it('a remote file named like the manifest cannot be fetched onto it', async () => {
    const dir = tmp();
    let caught: unknown;
    try {
      await planLocal(parseTarget(`personal:Docs/${MANIFEST_NAME}`), '/unused', dir);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(CliError);
    expect((caught as CliError).exitCode).toBe(ExitCode.usage);
  });
});

describe('symlink attacks on the staging folder', () => {
  it('refuses a symlink planted at a parent folder', async () => {
    const root = tmp();
    const outside = tmp();
    mkdirSync(join(root, 'personal'));
    symlinkSync(outside, join(root, 'personal', 'Docs'));
    const plan = await planLocal(parseTarget('personal:Docs/a.txt'), root);
    expect(await exitCodeOf(prepareFolders(plan))).toBe(ExitCode.usage);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('refuses a symlink planted at the target', async () => {
    const root = tmp();
    const outside = join(tmp(), 'victim');
    writeFileSync(outside, 'keep me');
    mkdirSync(join(root, 'personal', 'Docs'), { recursive: true });
    symlinkSync(outside, join(root, 'personal', 'Docs', 'a.txt'));
    const plan = await planLocal(parseTarget('personal:Docs/a.txt'), root);
    expect(await exitCodeOf(prepareFolders(plan))).toBe(ExitCode.usage);
    expect(await fs.readFile(outside, 'utf8')).toBe('keep me');
  });

  it('refuses a symlink swapped in at the target before the rename', async () => {
    const root = tmp();
    const outside = join(tmp(), 'victim');
    writeFileSync(outside, 'keep me');
    const plan = await planLocal(parseTarget('personal:Docs/a.txt'), root);
    await prepareFolders(plan);
    const result = stageFile(
      plan.file,
      async (sink) => {
        symlinkSync(outside, plan.file);
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
    const plan = await planLocal(parseTarget('personal:Race/a.txt'), root);
    const folder = await prepareFolders(plan);
    const result = stageFile(
      plan.file,
      async (sink) => {
        renameSync(join(root, 'personal', 'Race'), join(outside, 'Race'));
        symlinkSync(join(outside, 'Race'), join(root, 'personal', 'Race'));
        await pipeline(Readable.from([Buffer.from('payload')]), sink);
      },
      () => undefined,
      undefined,
      () => recheckFolders(plan, folder),
    );
    expect(await exitCodeOf(result)).toBe(ExitCode.usage);
    expect(readdirSync(join(outside, 'Race'))).toEqual([]);
  });

  it('refuses a folder replaced by another real folder (same path, other inode)', async () => {
    const root = tmp();
    const plan = await planLocal(parseTarget('personal:Race/a.txt'), root);
    const folder = await prepareFolders(plan);
    renameSync(join(root, 'personal', 'Race'), join(root, 'moved'));
    mkdirSync(join(root, 'personal', 'Race'));
    expect(await exitCodeOf(recheckFolders(plan, folder))).toBe(ExitCode.usage);
  });
});

describe('staged bytes land only after verification', () => {
  it('writes through an exclusive 0600 temp file and renames it into place', async () => {
    const root = tmp();
    const plan = await planLocal(parseTarget('personal:a.txt'), root);
    await prepareFolders(plan);
    let tempMode = 0;
    const { digest } = await stageFile(
      plan.file,
      async (sink) => {
        await pipeline(Readable.from([Buffer.from('hello')]), sink);
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
    expect(await fs.readFile(plan.file, 'utf8')).toBe('hello');
  });

  it('a failed verification removes the temp file and keeps the old copy', async () => {
    const root = tmp();
    const plan = await planLocal(parseTarget('personal:a.txt'), root);
    await prepareFolders(plan);
    writeFileSync(plan.file, 'old');
    const result = stageFile(
      plan.file,
      (sink) => pipeline(Readable.from([Buffer.from('corrupt')]), sink),
      () => {
        throw new CliError(ExitCode.verification, 'mismatch', 'retry');
      },
    );
    expect(await exitCodeOf(result)).toBe(ExitCode.verification);
    expect(readdirSync(join(root, 'personal'))).toEqual(['a.txt']);
    expect(await fs.readFile(plan.file, 'utf8')).toBe('old');
  });
});

describe('manifest', () => {
  const entry = {
    instance: 'personal',
    path: 'Docs/a.txt',
    local_path: '/x/a.txt',
    size: 1,
    sha256: 'a'.repeat(64),
    etag: '"e1"',
    fetched_at: '2026-01-01T00:00:00.000Z',
  };

  it('round-trips entries and is written atomically (no temp files left)', async () => {
    const root = tmp();
    const m = await Manifest.load(root);
    m.set(entry);
    await m.save();
    expect(readdirSync(root)).toEqual([MANIFEST_NAME]);
    expect((await Manifest.load(root)).get('personal', 'Docs/a.txt')).toEqual(entry);
  });

  it('never reads inherited properties for hostile keys', async () => {
    const m = await Manifest.load(tmp());
    expect(m.get('__proto__', '')).toBeUndefined();
    expect(m.get('constructor', 'x')).toBeUndefined();
  });

  it('a damaged manifest is a usage error that names the file', async () => {
    const root = tmp();
    writeFileSync(join(root, MANIFEST_NAME), '{"version":1,"files":{"x":{"size":"big"}}}');
    const err = await Manifest.load(root).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(ExitCode.usage);
    expect((err as CliError).message).toContain(MANIFEST_NAME);
  });
});
