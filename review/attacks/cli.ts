/**
 * Attacks on the CLI's staging (cli/client/transfer/*), run in-process against the real daemon
 * and the fake Nextcloud: symlink races, planted manifests (in the staging folder, where
 * they are never read, and records in the state folder), hard links, a staging root
 * that is a symlink, special files, and names that collide with the CLI's own files.
 * A race is made deterministic by wrapping the real TransferClient so the attacker acts
 * exactly while the bytes stream.
 */
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { TransferClient } from '../../cli/client/transfer/broker-client.js';
import { download } from '../../cli/client/transfer/download.js';
import { CliError } from '../../cli/client/transfer/errors.js';
import { LEGACY_MANIFEST_NAME, recordName, StateStore } from '../../cli/client/transfer/state.js';
import { parseTarget } from '../../cli/client/transfer/target.js';
import { upload } from '../../cli/client/transfer/upload.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import type { Case, Group } from '../runner.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';
import { call } from '../../support/mcp.js';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

interface Ctx {
  broker: Broker;
  dirs: string[];
}

function tempDir(ctx: Ctx, label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `review-${label}-`));
  ctx.dirs.push(dir);
  return dir;
}

function clientFor(ctx: Ctx, stageRoot: string): TransferClient {
  return new TransferClient({
    brokerUrl: new URL(ctx.broker.url),
    token: TRANSFER_TOKEN,
    stageRoot,
    stateDir: stateDirOf(stageRoot),
  });
}

/** The CLI's default state folder for a staging folder (cli/client/transfer/env.ts). */
const stateDirOf = (stage: string): string => `${stage}.state`;

/** `exit N` for a CLI failure; the outcome's status otherwise. */
async function attempt(fn: () => Promise<{ status: string }>): Promise<string> {
  try {
    return (await fn()).status;
  } catch (error) {
    if (error instanceof CliError) return `exit ${error.exitCode}`;
    throw error;
  }
}

function fetchInto(
  ctx: Ctx,
  stage: string,
  remote: string,
  opts: { local?: string; force?: boolean; client?: TransferClient } = {},
) {
  return download({
    client: opts.client ?? clientFor(ctx, stage),
    stageRoot: stage,
    state: new StateStore(stateDirOf(stage)),
    target: parseTarget(`personal:${remote}`),
    ...(opts.local === undefined ? {} : { local: opts.local }),
    force: opts.force ?? false,
    mode: 'fetch',
  });
}

/** Writes an old-style manifest in the staging folder holding one planted `entry` under `key`. */
function plantManifest(stage: string, key: string, entry: Record<string, unknown>): void {
  writeFileSync(
    join(stage, LEGACY_MANIFEST_NAME),
    JSON.stringify({ version: 1, files: { [key]: entry } }),
  );
}

/** Writes a record into the CLI's state folder, as someone with the user's rights could. */
function plantRecord(stage: string, entry: Record<string, unknown>): void {
  const dir = stateDirOf(stage);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(
    join(dir, recordName(String(entry.instance), String(entry.path))),
    JSON.stringify({ version: 1, ...entry }),
  );
}

/**
 * Stages an edited CliW/doc.txt under a planted `entry` (an old manifest in the staging
 * folder, or a record in the state folder), then pushes or checks it in; reports the
 * outcome and whether the owner's remote copy changed.
 */
async function uploadOverPlanted(
  ctx: Ctx,
  entry: Record<string, unknown>,
  mode: 'push' | 'checkin',
  where: 'staging folder' | 'state folder',
): Promise<string> {
  const stage = tempDir(ctx, 'stage');
  const local = join(stage, 'personal', 'CliW', 'doc.txt');
  mkdirSync(join(stage, 'personal', 'CliW'), { recursive: true });
  writeFileSync(local, 'agent version');
  if (where === 'staging folder') plantManifest(stage, 'personal:CliW/doc.txt', entry);
  else plantRecord(stage, { ...entry, local_path: local });
  const status = await attempt(() =>
    upload({
      client: clientFor(ctx, stage),
      stageRoot: stage,
      state: new StateStore(stateDirOf(stage)),
      target: parseTarget('personal:CliW/doc.txt'),
      mode,
    }),
  );
  const remote = (await ctx.broker.fake.readFile('CliW/doc.txt'))?.toString();
  return `${status}, remote ${remote === 'owner version' ? 'unchanged' : 'changed'}`;
}

function cases(ctx: Ctx): Case[] {
  const { broker } = ctx;
  return [
    {
      name: 'a parent folder swapped for a symlink while the bytes stream: nothing may land outside the root',
      expect: 'nothing outside the root',
      finding: 'F5',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const outside = tempDir(ctx, 'outside');
        const real = clientFor(ctx, stage);
        const dir = join(stage, 'personal', 'Cli', 'race');
        // The attacker moves the folder away and leaves a link in its place mid-download.
        const download = async (url: string, ifNoneMatch?: string) => {
          const answer = await real.download(url, ifNoneMatch);
          if (answer.unchanged) return answer;
          return {
            ...answer,
            save: (open: () => Promise<Writable>) =>
              answer.save(async () => {
                // The folders exist once the broker said yes; swap them before a byte lands.
                const sink = await open();
                renameSync(dir, join(outside, 'race'));
                symlinkSync(join(outside, 'race'), dir);
                return sink;
              }),
          };
        };
        // Every other member is the real client's, called on it (its state is #private).
        const racing = new Proxy(real, {
          get: (target, key) => {
            if (key === 'download') return download;
            const value: unknown = Reflect.get(target, key);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        const status = await attempt(() =>
          fetchInto(ctx, stage, 'Cli/race/a.txt', { client: racing }),
        );
        const leaked = readdirSync(join(outside, 'race')).filter((f) => !f.includes('broker-tmp'));
        return leaked.length === 0
          ? 'nothing outside the root'
          : `${status}, wrote ${join(outside, 'race', leaked[0] ?? '')}`;
      },
    },
    {
      name: 'a remote file named ".broker-manifest.json" fetched into a folder: the staged bytes stay what was reported',
      expect: 'intact or refused',
      finding: 'F6',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const dest = tempDir(ctx, 'dest');
        let out: { status: string; local_path?: string; sha256?: string };
        try {
          out = await fetchInto(ctx, stage, 'Cli/.broker-manifest.json', { local: `${dest}/` });
        } catch (error) {
          if (error instanceof CliError) return 'intact or refused';
          throw error;
        }
        const onDisk = readFileSync(out.local_path ?? '');
        return sha(onDisk) === out.sha256
          ? 'intact or refused'
          : `${out.status} with sha256 ${out.sha256?.slice(0, 8)}…, but the file holds ${onDisk.toString('utf8').slice(0, 20).replace(/\s+/g, ' ')}…`;
      },
    },
    {
      name: 'the staging root itself is a symlink (the owner chose it): staged inside the link target only',
      expect: 'staged in the link target',
      run: async () => {
        const target = tempDir(ctx, 'real-root');
        const holder = tempDir(ctx, 'holder');
        symlinkSync(target, join(holder, 'stage'));
        const status = await attempt(() => fetchInto(ctx, join(holder, 'stage'), 'Cli/plain.txt'));
        const inside = existsSync(join(target, 'personal', 'Cli', 'plain.txt'));
        // The CLI's records sit beside the staging folder (stage.state), nothing else does.
        const beside = readdirSync(holder).filter((f) => f !== 'stage' && f !== 'stage.state');
        return status === 'fetched' && inside && beside.length === 0
          ? 'staged in the link target'
          : `${status}, inside=${inside}, beside=${beside.join(',')}`;
      },
    },
    {
      name: 'a hard link to a file outside the root sits at the target; fetch --force replaces the link only',
      expect: 'fetched, outside file untouched',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const outside = tempDir(ctx, 'victim');
        writeFileSync(join(outside, 'precious'), 'precious');
        mkdirSync(join(stage, 'personal', 'Cli'), { recursive: true });
        linkSync(join(outside, 'precious'), join(stage, 'personal', 'Cli', 'plain.txt'));
        const status = await attempt(() => fetchInto(ctx, stage, 'Cli/plain.txt', { force: true }));
        const victim = readFileSync(join(outside, 'precious'), 'utf8');
        return `${status}, outside file ${victim === 'precious' ? 'untouched' : 'overwritten'}`;
      },
    },
    {
      name: 'a FIFO planted at the target (opening it would block): refused at once',
      expect: 'exit 1',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        mkdirSync(join(stage, 'personal', 'Cli'), { recursive: true });
        execFileSync('mkfifo', [join(stage, 'personal', 'Cli', 'plain.txt')]);
        return attempt(() => fetchInto(ctx, stage, 'Cli/plain.txt', { force: true }));
      },
    },
    {
      name: 'push of a FIFO (a local file that never ends): refused at once',
      expect: 'exit 1',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const fifo = join(stage, 'fifo');
        execFileSync('mkfifo', [fifo]);
        return attempt(() =>
          upload({
            client: clientFor(ctx, stage),
            stageRoot: stage,
            state: new StateStore(stateDirOf(stage)),
            target: parseTarget('personal:Cli/new-from-fifo.txt'),
            local: fifo,
            mode: 'push',
          }),
        );
      },
    },
    {
      name: '"/dev/null" as the local destination',
      expect: 'exit 1',
      run: () =>
        attempt(() =>
          fetchInto(ctx, tempDir(ctx, 'stage'), 'Cli/plain.txt', { local: '/dev/null' }),
        ),
    },
    {
      name: 'planted old manifest: an entry under "__proto__" that matches the local file does not vouch for it',
      expect: 'exit 5, local file untouched',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        mkdirSync(join(stage, 'personal', 'Cli'), { recursive: true });
        writeFileSync(join(stage, 'personal', 'Cli', 'plain.txt'), 'my work');
        const entry = {
          instance: 'personal',
          path: 'Cli/plain.txt',
          local_path: '/tmp/x',
          size: 7,
          sha256: sha('my work'),
          etag: '"x"',
          fetched_at: 'now',
        };
        writeFileSync(
          join(stage, LEGACY_MANIFEST_NAME),
          `{"version":1,"files":{"__proto__":${JSON.stringify(entry)}}}`,
        );
        const status = await attempt(() => fetchInto(ctx, stage, 'Cli/plain.txt'));
        const local = readFileSync(join(stage, 'personal', 'Cli', 'plain.txt'), 'utf8');
        return `${status}, local file ${local === 'my work' ? 'untouched' : 'overwritten'}`;
      },
    },
    {
      name: 'planted old manifest: an entry whose local_path points outside the root is never written to',
      expect: 'fetched, outside untouched',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const outside = tempDir(ctx, 'outside');
        const victim = join(outside, 'victim');
        writeFileSync(victim, 'victim');
        const entry = {
          instance: 'personal',
          path: 'Cli/plain.txt',
          local_path: victim,
          size: 6,
          sha256: sha('victim'),
          etag: '"stale"',
          fetched_at: 'now',
        };
        plantManifest(stage, 'personal:Cli/plain.txt', entry);
        const status = await attempt(() => fetchInto(ctx, stage, 'Cli/plain.txt'));
        return `${status}, outside ${readFileSync(victim, 'utf8') === 'victim' ? 'untouched' : 'overwritten'}`;
      },
    },
    {
      name: 'a remote .broker-manifest.json staged beside an edited file vouches for the edit: the next fetch replaces it',
      expect: 'exit 5, edit kept',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const first = await fetchInto(ctx, stage, 'Cli/posing/x.txt');
        const local = first.local_path ?? '';
        writeFileSync(local, "the agent's edit");
        await fetchInto(ctx, stage, 'Cli/posing/.broker-manifest.json');
        await broker.fake.writeFile('Cli/posing/x.txt', 'changed by the owner');
        const status = await attempt(() => fetchInto(ctx, stage, 'Cli/posing/x.txt', { local }));
        return `${status}, edit ${readFileSync(local, 'utf8') === "the agent's edit" ? 'kept' : 'replaced'}`;
      },
    },
    ...(['staging folder', 'state folder'] as const).map((where) => ({
      name: `planted in the ${where}: etag "*" for a file never fetched, then push (If-Match: * would clobber)`,
      expect: 'exit 5, remote unchanged',
      run: () =>
        uploadOverPlanted(
          ctx,
          {
            instance: 'personal',
            path: 'CliW/doc.txt',
            local_path: 'x',
            size: 1,
            sha256: sha('x'),
            etag: '*',
            fetched_at: 'now',
          },
          'push',
          where,
        ),
    })),
    ...(
      [
        ['staging folder', 'exit 1, remote unchanged'],
        ['state folder', 'exit 3, remote unchanged'],
      ] as const
    ).map(([where, expect]) => ({
      name: `planted in the ${where}: another file's lock token, then checkin`,
      expect,
      run: async () => {
        const transfer = await broker.transfer();
        const other = await call(transfer, 'checkout', {
          instance: 'personal',
          path: 'CliW/locked.txt',
        });
        const verdict = await uploadOverPlanted(
          ctx,
          {
            instance: 'personal',
            path: 'CliW/doc.txt',
            local_path: 'x',
            size: 1,
            sha256: sha('x'),
            etag: null,
            fetched_at: 'now',
            lock_token: other.lock_token,
          },
          'checkin',
          where,
        );
        await call(transfer, 'checkin', {
          instance: 'personal',
          path: 'CliW/locked.txt',
          lock_token: other.lock_token,
          abandon: true,
        });
        return verdict;
      },
    })),
    {
      name: 'an old manifest that is a symlink to a file outside the root: never read or written',
      expect: 'fetched, outside untouched',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const outside = tempDir(ctx, 'outside');
        const victim = join(outside, 'victim.json');
        writeFileSync(victim, JSON.stringify({ version: 1, files: {} }));
        symlinkSync(victim, join(stage, LEGACY_MANIFEST_NAME));
        const status = await attempt(() => fetchInto(ctx, stage, 'Cli/plain.txt'));
        return `${status}, outside ${readFileSync(victim, 'utf8') === JSON.stringify({ version: 1, files: {} }) ? 'untouched' : 'overwritten'}`;
      },
    },
    {
      name: 'a record in the state folder that is a symlink to a file outside: refused, its target untouched',
      expect: 'exit 1, outside untouched',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const outside = tempDir(ctx, 'outside');
        const victim = join(outside, 'victim.json');
        writeFileSync(victim, 'victim');
        mkdirSync(stateDirOf(stage), { mode: 0o700 });
        symlinkSync(victim, join(stateDirOf(stage), recordName('personal', 'Cli/plain.txt')));
        const status = await attempt(() => fetchInto(ctx, stage, 'Cli/plain.txt'));
        return `${status}, outside ${readFileSync(victim, 'utf8') === 'victim' ? 'untouched' : 'overwritten'}`;
      },
    },
    {
      name: 'the state folder is a symlink to a folder outside: refused, nothing written there',
      expect: 'exit 1, outside empty',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const outside = tempDir(ctx, 'outside');
        symlinkSync(outside, stateDirOf(stage));
        const status = await attempt(() => fetchInto(ctx, stage, 'Cli/plain.txt'));
        return `${status}, outside ${readdirSync(outside).length === 0 ? 'empty' : 'written'}`;
      },
    },
    {
      name: 'remote names special to shells and tools ("-rf", "~", "$HOME", "*", "a:b") stage under the root',
      expect: 'fetched ×5 under the root',
      run: async () => {
        const stage = tempDir(ctx, 'stage');
        const names = ['-rf', '~', '$HOME', '*', 'a:b'];
        let ok = 0;
        for (const n of names) {
          const out = await fetchInto(ctx, stage, `Cli/odd/${n}`);
          if (
            out.status === 'fetched' &&
            out.local_path === join(stage, 'personal', 'Cli', 'odd', n)
          )
            ok += 1;
        }
        return `fetched ×${ok} under the root`;
      },
    },
    {
      name: 'a 220-byte name of 4-byte characters (the temp name must stay under 255 bytes)',
      expect: 'fetched',
      run: () =>
        attempt(() => fetchInto(ctx, tempDir(ctx, 'stage'), `Cli/${'\u{1F600}'.repeat(55)}`)),
    },
  ];
}

export const cliGroup: Group = {
  title: 'attacks: the CLI staging (races, planted manifests, links, special files)',
  async build() {
    const broker = await startBroker();
    const ctx: Ctx = { broker, dirs: [] };
    const { fake } = broker;
    await fake.writeFile('Cli/race/a.txt', 'remote bytes of a.txt');
    await fake.writeFile(
      'Cli/.broker-manifest.json',
      'remote bytes that happen to share the manifest name',
    );
    await fake.writeFile('Cli/plain.txt', 'plain remote file');
    await fake.writeFile('Cli/posing/x.txt', 'original');
    await fake.writeFile(
      'Cli/posing/.broker-manifest.json',
      JSON.stringify({ version: 1, files: { 'personal:Cli/posing/x.txt': { sha256: 'forged' } } }),
    );
    for (const n of ['-rf', '~', '$HOME', '*', 'a:b']) await fake.writeFile(`Cli/odd/${n}`, n);
    await fake.writeFile(`Cli/${'\u{1F600}'.repeat(55)}`, 'emoji name');
    await fake.writeFile('CliW/doc.txt', 'owner version');
    await fake.writeFile('CliW/locked.txt', 'locked by another checkout');
    await broker.grant([
      { path: 'Cli', mode: 'read' },
      { path: 'CliW', mode: 'write' },
    ]);
    return {
      cases: cases(ctx),
      teardown: async () => {
        await broker.close();
        // A staging folder's records sit beside it (`<stage>.state`): both go.
        for (const d of ctx.dirs)
          for (const path of [d, stateDirOf(d)]) rmSync(path, { recursive: true, force: true });
      },
    };
  },
};
