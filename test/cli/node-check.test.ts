/**
 * bin/broker.js refuses a Node older than 22 before anything else loads: Node 20 used to
 * end in a segmentation fault when it loaded the SQLite module (Node-API 10). Tested as
 * the shim runs: a real subprocess of the machine's own Node (20 on our machines, found
 * on PATH without scripts/use-node.sh) and of the pinned one, on an install folder
 * holding the shim and a dist/ whose CLI writes a marker when it is loaded, so a refusal
 * is seen to come before it. And the build records only a Node that can run the broker.
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
import { nodeProblem, supportedNode, type BuiltNode } from '../../bin/node-check.js';
import { recordNode, thisNode } from '../../scripts/record-node.js';
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
    // The machine's Node decides which behaviour is right; either is asserted in full.
    switch (supportedNode(version) ? 'runs' : 'too old') {
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

  it('runs an install built with another supported Node (the SQLite module is Node-API)', () => {
    const { dir, marker } = install({ path: '/opt/node-26/bin/node', version: 'v26.12.1' });
    expect(runShim(process.execPath, dir, ['serve']).code).toBe(0);
    expect(existsSync(marker)).toBe(true);
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
    const dir = mkdtempSync(join(tmpdir(), 'broker-node-record-'));
    folders.push(dir);
    const out = join(dir, 'dist', 'node.json');
    expect(recordNode(out)).toEqual({ ok: true });
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual({
      path: process.execPath,
      version: process.version,
    });
  });
});

describe('the build records only a Node that can run the broker', () => {
  // `npx broker` under Node 20 builds the package again on its first run: it used to
  // record Node 20 as the install's Node, which the refusal then named as the way out.
  it('refuses Node 20, leaving the record of the Node that built the install', () => {
    const dir = mkdtempSync(join(tmpdir(), 'broker-node-record-'));
    folders.push(dir);
    const out = join(dir, 'node.json');
    expect(recordNode(out)).toEqual({ ok: true });
    const before = readFileSync(out, 'utf8');
    const refused = recordNode(out, { path: '/usr/bin/node', version: 'v20.20.2' });
    expect(refused).toEqual({
      ok: false,
      error:
        'Node.js 20.20.2 (/usr/bin/node) cannot run the broker: it needs Node.js 22, 24 or 26 (engines >=22)',
    });
    expect(readFileSync(out, 'utf8')).toBe(before);
  });

  it("as `npm run build` runs it under the machine's own Node: says so, and does not fail the build", () => {
    const node = machineNode();
    const dir = mkdtempSync(join(tmpdir(), 'broker-node-record-'));
    folders.push(dir);
    const out = join(dir, 'node.json');
    const r = spawnSync(
      node,
      ['--import', import.meta.resolve('tsx'), join(ROOT, 'scripts', 'record-node.ts'), out],
      { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: process.env.HOME } },
    );
    if (supportedNode(versionOf(node))) {
      expect(r.status).toBe(0);
      expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ path: node });
    } else {
      // A failed build under `npx broker` would leave npx's cache for the folder broken.
      expect(r.status).toBe(0);
      expect(r.stderr).toContain(`npm run build: Node.js ${versionOf(node).slice(1)} (${node})`);
      expect(r.stderr).toContain("this Node is not recorded as the install's");
      expect(r.stderr).toContain('next: run `. scripts/use-node.sh`');
      expect(r.stderr).toContain('then npm ci again');
      expect(existsSync(out)).toBe(false);
    }
  });
});

describe('nodeProblem', () => {
  const built: BuiltNode = { path: '/n24/bin/node', version: 'v24.22.3' };
  const running = (version: string) => ({ version, execPath: '/usr/bin/node' });

  it.each(['v18.20.0', 'v20.20.2', 'v21.7.3'])(
    'refuses Node %s, naming the built Node as a way out',
    (version) => {
      const p = nodeProblem(running(version), built);
      expect(p?.error).toBe(
        `Node.js ${version.slice(1)} (/usr/bin/node) cannot run the broker: it needs Node.js 22, 24 or 26 (engines >=22)`,
      );
      expect(p?.nextStep).toContain('. scripts/use-node.sh');
      expect(p?.nextStep).toContain('the Node this install was built with: /n24/bin/node');
    },
  );

  it('names only use-node.sh when the record names an old Node (from before the record refused one)', () => {
    const p = nodeProblem(running('v20.1.0'), { path: '/usr/bin/node', version: 'v20.1.0' });
    expect(p?.nextStep).toContain('. scripts/use-node.sh');
    expect(p?.nextStep).not.toContain('built with');
  });

  it.each(['v22.23.5', 'v23.11.0', 'v24.22.3', 'v26.12.1', 'v27.0.0'])(
    'accepts Node %s, whatever the install was built with',
    (v) => {
      expect(nodeProblem(running(v), built)).toBeUndefined();
      expect(nodeProblem(running(v), undefined)).toBeUndefined();
    },
  );

  it('refuses a version it cannot read', () => {
    expect(nodeProblem(running('unknown'), built)?.error).toContain('cannot run the broker');
  });
});
