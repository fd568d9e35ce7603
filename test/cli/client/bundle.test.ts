/**
 * The agent's file (dist/broker-cli.mjs, scripts/build-cli.ts): one ES module that needs
 * node and nothing else. Every other test in test/cli/client/ runs the client commands as this
 * file, built into a folder with no node_modules above it (support/cli-bundle.ts); this
 * one checks what the file is made of and what it answers on its own.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, parse } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Metafile } from 'esbuild';
import { ExitCode } from '../../../cli/command.js';
import { clientCommands, OWNER_COMMAND_NAMES } from '../../../cli/client/commands/index.js';
import { commands } from '../../../cli/main.js';
import { ownerCommands } from '../../../cli/owner/index.js';
import { buildClientBundle } from '../../../scripts/build-cli.js';
import { cliBundle } from '../../../support/cli-bundle.js';
import { ROOT } from '../../../support/processes.js';

let meta: Metafile;
let bundle: string;
beforeAll(async () => {
  bundle = await cliBundle();
  const dir = mkdtempSync(join(tmpdir(), 'broker-cli-meta-'));
  try {
    meta = await buildClientBundle(join(dir, 'b.mjs'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const run = (args: string[]) =>
  spawnSync(process.execPath, [bundle, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  });

describe('what the agent file is made of', () => {
  it('imports nothing but node: builtins', () => {
    const imports = Object.values(meta.outputs).flatMap((o) => o.imports);
    expect(imports.length).toBeGreaterThan(0);
    for (const i of imports) {
      expect(i.external, i.path).toBe(true);
      expect(i.path).toMatch(/^node:[a-z0-9_/]+$/);
    }
    // The file as written: static imports from node: only, no require, no dynamic import.
    const text = readFileSync(bundle, 'utf8');
    const specifiers = [...text.matchAll(/^import\s[^;]*?from\s+"([^"]+)";$/gm)].map((m) => m[1]);
    expect(specifiers.length).toBeGreaterThan(0);
    expect(specifiers.filter((s) => !s?.startsWith('node:'))).toEqual([]);
    expect(text).not.toMatch(/\brequire\(|\bimport\(/);
  });

  it('holds no daemon code and no package: only cli/, broker/base/ and the canonical-path rule', () => {
    const inputs = Object.keys(meta.inputs);
    expect(inputs).toContain('cli/client/entry.ts');
    for (const input of inputs) {
      expect(input).toMatch(/^(cli\/|broker\/base\/|broker\/wall\/canonical\.ts$)/);
    }
    // Nothing of the owner's program (cli/owner/, and cli/main.ts, which holds every command).
    expect(inputs.filter((i) => i.startsWith('cli/owner/') || i === 'cli/main.ts')).toEqual([]);
  });

  it('the owner commands it names are exactly the commands it leaves out', () => {
    expect(ownerCommands.map((c) => c.name).sort()).toEqual([...OWNER_COMMAND_NAMES].sort());
    expect(commands.map((c) => c.name).sort()).toEqual(
      [...clientCommands, ...ownerCommands].map((c) => c.name).sort(),
    );
  });

  it('bin/broker.js sends exactly the client commands to it', () => {
    const shim = readFileSync(join(ROOT, 'bin', 'broker.js'), 'utf8');
    const listed = /const CLIENT_COMMANDS = \[([^\]]*)\]/.exec(shim)?.[1] ?? '';
    const names = [...listed.matchAll(/'([a-z]+)'/g)].map((m) => m[1]);
    expect(names).toEqual(clientCommands.map((c) => c.name));
  });

  it("loads neither node's bundled undici nor TLS for a broker on http (each costs every command ~20 ms of start-up)", () => {
    const dir = mkdtempSync(join(tmpdir(), 'broker-cli-modules-'));
    try {
      const report = join(dir, 'report.mjs');
      writeFileSync(
        report,
        "process.on('exit', () => process.stderr.write(`\\nMODULES ${JSON.stringify(process.moduleLoadList)}\\n`));\n",
      );
      const loaded = (brokerUrl: string): string[] => {
        const r = spawnSync(
          process.execPath,
          ['--import', report, bundle, 'fetch', 'personal:a.txt'],
          {
            encoding: 'utf8',
            env: {
              PATH: process.env.PATH,
              HOME: dir,
              BROKER_URL: brokerUrl,
              BROKER_TRANSFER_TOKEN: 'x'.repeat(32),
              BROKER_STAGE_DIR: join(dir, 'stage'),
            },
          },
        );
        // The broker is unreachable (port 9): the command fails after trying it.
        expect(r.status).toBe(ExitCode.infrastructure);
        return JSON.parse(/^MODULES (.*)$/m.exec(r.stderr)?.[1] ?? '[]') as string[];
      };
      const heavy = (list: string[]) => list.filter((m) => /undici|\btls\b/.test(m));
      expect(heavy(loaded('http://127.0.0.1:9'))).toEqual([]);
      // The measure can see them: an https broker does load TLS.
      expect(heavy(loaded('https://127.0.0.1:9'))).toContain('NativeModule tls');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs from a folder with no node_modules anywhere above it', () => {
    for (let dir = dirname(bundle); dir !== parse(dir).root; dir = dirname(dir)) {
      expect(existsSync(join(dir, 'node_modules')), dir).toBe(false);
    }
  });
});

describe('what the agent file answers on its own', () => {
  it('help lists the client commands and says where the owner commands run', () => {
    const r = run(['--help']);
    expect(r.status).toBe(ExitCode.ok);
    for (const c of clientCommands) expect(r.stdout).toContain(`  ${c.name} `);
    expect(r.stdout).not.toMatch(/^ {2}(serve|start|doctor|audit) /m);
    expect(r.stdout).toContain('run where the broker is installed');
  });

  it('--version is the version it was built from (there is no package.json beside it)', () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    const r = run(['--version']);
    expect(r.status).toBe(ExitCode.ok);
    expect(r.stdout.trim()).toBe(version);
  });

  it.each(OWNER_COMMAND_NAMES.map((n) => [n]))(
    '`broker %s` is a usage error naming where it runs, not "unknown command"',
    (name) => {
      const r = run([name]);
      expect(r.status).toBe(ExitCode.usage);
      const out = JSON.parse(r.stdout) as { status: string; error: string; next_step: string };
      expect(out.status).toBe('failed');
      expect(out.error).toContain("owner's command");
      expect(out.next_step).toContain('where the broker is installed');
    },
  );

  it('an unknown command is still one', () => {
    const r = run(['fecth']);
    expect(r.status).toBe(ExitCode.usage);
    expect(r.stdout).toContain('unknown command \\"fecth\\"');
  });
});
