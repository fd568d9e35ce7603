/**
 * bin/broker.js refuses a Node that cannot run the daemon before anything else loads:
 * Node 20 used to end in a segmentation fault when it loaded the SQLite module that
 * `npm ci` built for Node 24. Tested as the shim runs: a real subprocess of the machine's
 * own Node (20 on our machines, found on PATH without scripts/use-node.sh) and of the
 * pinned one, on an install folder holding the shim and a dist/ whose CLI writes a
 * marker when it is loaded, so a refusal is seen to come before it.
 */
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MIN_NODE_MAJOR, nodeProblem, type BuiltNode } from '../../bin/node-check.js';
import { thisNode } from '../../scripts/record-node.js';
import { ROOT } from '../../support/processes.js';

const folders: string[] = [];
afterEach(() => {
  for (const f of folders.splice(0)) rmSync(f, { recursive: true, force: true });
});

/** An install: bin/ as shipped, dist/node.json as given, a dist CLI that leaves a mark. */
function install(built: BuiltNode | undefined): { dir: string; marker: string } {
  const dir = mkdtempSync(join(tmpdir(), 'broker-node-check-'));
  folders.push(dir);
  mkdirSync(join(dir, 'bin'));
  for (const f of ['broker.js', 'node-check.js'])
    copyFileSync(join(ROOT, 'bin', f), join(dir, 'bin', f));
  mkdirSync(join(dir, 'dist', 'cli'), { recursive: true });
  const marker = join(dir, 'loaded');
  writeFileSync(
    join(dir, 'dist', 'cli', 'main.js'),
    `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'x');\n` +
      `export const main = async (argv) => { process.stdout.write('ran ' + argv.join(' ') + '\\n'); return 0; };\n`,
  );
  if (built !== undefined) writeFileSync(join(dir, 'dist', 'node.json'), JSON.stringify(built));
  return { dir, marker };
}

function runShim(node: string, dir: string, args: string[]) {
  const r = spawnSync(node, [join(dir, 'bin', 'broker.js'), ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const versionOf = (node: string): string =>
  spawnSync(node, ['-p', 'process.version'], { encoding: 'utf8' }).stdout.trim();

/**
 * The machine's own Node: the first `node` on PATH outside the pinned one's folder (what
 * a new terminal without use-node.sh runs), else /usr/bin/node; the pinned one when the
 * machine has no other.
 */
function machineNode(): string {
  const pinnedDir = dirname(process.execPath);
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((d) => d !== '' && d !== pinnedDir)
    .map((d) => join(d, 'node'));
  return (
    [...onPath, '/usr/bin/node', '/usr/local/bin/node'].find(
      (n) => existsSync(n) && versionOf(n) !== process.version,
    ) ?? process.execPath
  );
}

const majorOf = (version: string): number => Number(/^v(\d+)\./.exec(version)?.[1]);

/** What the shim must do on `node` for an install the pinned Node built. */
function expectedOn(node: string): 'too old' | 'other ABI' | 'runs' {
  if (majorOf(versionOf(node)) < MIN_NODE_MAJOR) return 'too old';
  const modules = spawnSync(node, ['-p', 'process.versions.modules'], { encoding: 'utf8' });
  return modules.stdout.trim() === process.versions.modules ? 'runs' : 'other ABI';
}

describe("the machine's own Node (20 on our machines) is refused before anything loads", () => {
  const node = machineNode();
  const version = versionOf(node);

  it.each([
    ['node bin/broker.js serve', [] as string[], ['serve']],
    ['npm start', ['--max-semi-space-size=4', '--no-memory-reducer'], ['start']],
  ])('%s: a refusal naming the Node found, the one needed and how to get it', (_, flags, args) => {
    const { dir, marker } = install(thisNode());
    const r = spawnSync(node, [...flags, join(dir, 'bin', 'broker.js'), ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    });
    switch (expectedOn(node)) {
      case 'too old':
        expect(r.status).toBe(1);
        expect(r.stderr).toContain(`Node.js ${version.slice(1)} (${node}) cannot run the broker`);
        expect(r.stderr).toContain('it needs Node.js 22, 24 or 26');
        expect(r.stderr).toContain('. scripts/use-node.sh');
        // The way out names the Node this install was built with.
        expect(r.stderr).toContain(process.execPath);
        expect(existsSync(marker)).toBe(false);
        expect(existsSync(join(dir, 'data'))).toBe(false);
        break;
      case 'other ABI':
        expect(r.status).toBe(1);
        expect(r.stderr).toContain(
          `this install was built with Node.js ${process.version.slice(1)}`,
        );
        expect(existsSync(marker)).toBe(false);
        break;
      case 'runs':
        expect(r.status).toBe(0);
        expect(r.stdout).toBe(`ran ${args.join(' ')}\n`);
    }
  });

  it('the client commands still run on it: they load the agent file, nothing native', () => {
    const { dir } = install(thisNode());
    writeFileSync(join(dir, 'dist', 'broker-cli.mjs'), "process.stdout.write('client\\n');\n");
    const r = spawnSync(node, [join(dir, 'bin', 'broker.js'), 'fetch', 'demo:a'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('client\n');
  });
});

describe('the pinned Node', () => {
  it('runs the CLI of an install it built', () => {
    const { dir, marker } = install(thisNode());
    const r = runShim(process.execPath, dir, ['status', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('ran status --json\n');
    expect(existsSync(marker)).toBe(true);
  });

  it('refuses an install built for another ABI, naming the Node it was built with', () => {
    const other: BuiltNode = { path: '/opt/node-22/bin/node', version: 'v22.23.5', modules: '127' };
    const { dir, marker } = install(other);
    const r = runShim(process.execPath, dir, ['serve']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'this install was built with Node.js 22.23.5 (/opt/node-22/bin/node)',
    );
    expect(r.stderr).toContain(`ABI 127, not ${process.versions.modules}`);
    expect(r.stderr).toContain('next: run it with /opt/node-22/bin/node, or run `npm ci` again');
    expect(existsSync(marker)).toBe(false);
  });

  it('without dist/node.json (an older build) checks the version alone', () => {
    const { dir } = install(undefined);
    expect(runShim(process.execPath, dir, ['grants']).stdout).toBe('ran grants\n');
  });

  it('records the Node that builds the install (npm run build writes dist/node.json)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: { build: string };
    };
    expect(pkg.scripts.build).toContain('tsx scripts/record-node.ts');
    expect(thisNode()).toEqual({
      path: process.execPath,
      version: process.version,
      modules: process.versions.modules,
    });
  });
});

describe('nodeProblem', () => {
  const built: BuiltNode = { path: '/n24/bin/node', version: 'v24.22.3', modules: '137' };
  const running = (version: string, modules: string) => ({
    version,
    modules,
    execPath: '/usr/bin/node',
  });

  it.each([
    ['v18.20.0', '108'],
    ['v20.20.2', '115'],
    ['v21.7.3', '120'],
  ])('refuses Node %s, naming the built Node as a way out', (version, modules) => {
    const p = nodeProblem(running(version, modules), built);
    expect(p?.error).toBe(
      `Node.js ${version.slice(1)} (/usr/bin/node) cannot run the broker: it needs Node.js 22, 24 or 26 (engines >=22)`,
    );
    expect(p?.nextStep).toContain('. scripts/use-node.sh');
    expect(p?.nextStep).toContain('/n24/bin/node');
  });

  it('names only use-node.sh when the install itself was built with an old Node', () => {
    const p = nodeProblem(running('v20.1.0', '115'), {
      ...built,
      version: 'v20.1.0',
      modules: '115',
    });
    expect(p?.nextStep).toContain('. scripts/use-node.sh');
    expect(p?.nextStep).not.toContain('built with');
  });

  it.each([
    ['v22.23.5', '127'],
    ['v24.22.3', '137'],
    ['v26.12.1', '147'],
  ])('accepts Node %s on an install built for its ABI, and when the build is unknown', (v, m) => {
    expect(nodeProblem(running(v, m), { ...built, version: v, modules: m })).toBeUndefined();
    expect(nodeProblem(running(v, m), undefined)).toBeUndefined();
  });

  it('refuses a supported Node on an install built for another ABI', () => {
    const p = nodeProblem(running('v26.12.1', '147'), built);
    expect(p?.error).toContain('ABI 137, not 147');
    expect(p?.nextStep).toBe('run it with /n24/bin/node, or run `npm ci` again under this Node');
  });

  it('refuses a version it cannot read', () => {
    expect(nodeProblem(running('unknown', '137'), built)?.error).toContain('cannot run the broker');
  });
});
