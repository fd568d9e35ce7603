/**
 * test/ follows the source layout (CONTRIBUTING.md, "Where a test lives"): every folder
 * under test/ is one of the named suites that cut across the code, or mirrors a source
 * folder that exists (test/X/… is broker/X/…, test/cli/… is cli/…). And every test path
 * the documents cite exists, so a moved test cannot leave SECURITY.md's table behind.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { machineEnv } from '../../support/test-tmp.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The suites that test across the source's folders, each with what it holds. */
const CROSS_CUTTING: ReadonlyMap<string, string> = new Map([
  ['real', 'the real-server suite: the broker against a real Nextcloud'],
  ['faults', 'faults injected into the whole daemon'],
  ['soak', 'the soak run'],
  ['review', 'the review scripts in review/'],
  ['deploy', 'the Dockerfile and the compose file'],
  ['docs', 'the documents held to the code'],
  ['fake-nextcloud', 'the fake Nextcloud (fakes/nextcloud/)'],
  ['fake-homeserver', 'the fake Matrix homeserver (fakes/homeserver/)'],
]);

/** Folders that hold data for the tests beside them, not tests of their own. */
const DATA_FOLDER = 'fixtures';

/** Whether a folder holds a file at any depth (git keeps no empty folder, a clone has none). */
function holdsFiles(dir: string): boolean {
  return readdirSync(dir, { withFileTypes: true }).some(
    (e) => e.isFile() || (e.isDirectory() && holdsFiles(join(dir, e.name))),
  );
}

/** Every folder below `dir` that holds files, as paths relative to it. */
function folders(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true })
    .filter((e) => e.isDirectory() && holdsFiles(join(dir, prefix, e.name)))
    .flatMap((e) => {
      const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
      return [rel, ...folders(dir, rel)];
    });
}

/** The source folder a test folder mirrors: test/cli/… is cli/…, any other test/X/… is broker/X/…. */
function sourceOf(testFolder: string): string {
  return testFolder === 'cli' || testFolder.startsWith('cli/')
    ? testFolder
    : `broker/${testFolder}`;
}

describe('test/ follows the source layout', () => {
  const testRoot = join(ROOT, 'test');
  const mirrored = folders(testRoot).filter(
    (f) => !CROSS_CUTTING.has(f.split('/')[0] ?? '') && !f.split('/').includes(DATA_FOLDER),
  );

  it('every folder mirrors a source folder that exists, or is a named cross-cutting suite', () => {
    const strays = mirrored.filter((f) => {
      const source = join(ROOT, sourceOf(f));
      return !existsSync(source) || !statSync(source).isDirectory();
    });
    expect(strays, 'move these tests beside their source, or name the suite here').toEqual([]);
  });

  it('finds the mirrored folders (the check is not vacuous)', () => {
    expect(mirrored).toEqual(expect.arrayContaining(['operations/undo', 'cli/owner', 'wall']));
  });

  it('keeps no test file loose in test/ itself', () => {
    const loose = readdirSync(testRoot, { withFileTypes: true }).filter((e) => e.isFile());
    expect(loose.map((e) => e.name)).toEqual([]);
  });

  it('names only cross-cutting suites that exist', () => {
    for (const suite of CROSS_CUTTING.keys())
      expect(existsSync(join(testRoot, suite)), `test/${suite}`).toBe(true);
  });
});

/** `a/{b,c}.ts` as `a/b.ts` and `a/c.ts` (one brace group, as the documents write it). */
function expandBraces(path: string): string[] {
  const m = /^(.*)\{([^}]*)\}(.*)$/.exec(path);
  if (m === null) return [path];
  const [, head = '', alternatives = '', tail = ''] = m;
  return alternatives.split(',').map((a) => `${head}${a}${tail}`);
}

/** Whether a path exists, or, for `folder/name-*.ts`, whether a file in the folder matches. */
function exists(path: string): boolean {
  if (!path.includes('*')) return existsSync(join(ROOT, path));
  const folder = join(ROOT, dirname(path));
  const pattern = new RegExp(
    `^${basename(path)
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')}$`,
  );
  return existsSync(folder) && readdirSync(folder).some((f) => pattern.test(f));
}

describe('the test paths the documents cite', () => {
  const documents = [
    'README.md',
    'CONTRIBUTING.md',
    'SECURITY.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const cited = documents.flatMap((name) =>
    [...readFileSync(join(ROOT, name), 'utf8').matchAll(/(?<![\w./-])test\/[\w./{},*-]+/g)]
      .map((m) => m[0].replace(/[.,]+$/, ''))
      .flatMap(expandBraces)
      .map((path) => ({ name, path })),
  );

  it('exist', () => {
    const missing = cited.filter(({ path }) => !exists(path));
    expect(missing).toEqual([]);
  });

  it('are found (the check is not vacuous)', () => {
    expect(cited.length).toBeGreaterThan(100);
    expect(cited.map((c) => c.path)).toContain('test/approval/matrix-edits.test.ts');
  });
});

describe("a run's temp folders", () => {
  // support/test-tmp.ts, vitest's global setup: one folder per run, removed at its end.
  it("are under the run's own folder, for the tests and for the processes they start", () => {
    expect(basename(tmpdir())).toMatch(/^broker-tests-[A-Za-z0-9]{6}$/);
    const child = execFileSync(process.execPath, ['-p', "require('node:os').tmpdir()"], {
      encoding: 'utf8',
    });
    expect(child.trim()).toBe(tmpdir());
  });

  it("are not handed to the real server's commands, which outlive the run as another user", () => {
    const child = execFileSync(process.execPath, ['-p', "require('node:os').tmpdir()"], {
      encoding: 'utf8',
      env: machineEnv(),
    });
    expect(child.trim()).not.toBe(tmpdir());
    expect(tmpdir().startsWith(`${child.trim()}/`)).toBe(true);
  });
});
