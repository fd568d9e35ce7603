/** The standalone runner: `npm run fake-nextcloud -- --port N --root DIR --user U --password P`. */
import { spawn, type ChildProcess } from 'node:child_process';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { basic } from './helpers.js';

const repo = path.resolve(import.meta.dirname, '../..');

const spawned = new Set<ChildProcess>();
afterEach(() => {
  // A failed test must not leave a server running.
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  spawned.clear();
});

function run(args: string[], viaNpm: boolean) {
  const child = viaNpm
    ? spawn('npm', ['run', '--silent', 'fake-nextcloud', '--', ...args], { cwd: repo })
    : spawn(path.join(repo, 'node_modules/.bin/tsx'), ['fakes/nextcloud-main.ts', ...args], {
        cwd: repo,
      });
  spawned.add(child);
  let stdout = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => (stdout += d));
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0] ?? '');
    });
    child.on('exit', (code) => reject(new Error(`exited early with ${code}`)));
  });
  return { child, ready, stdout: () => stdout };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe('fake-nextcloud standalone', () => {
  it('prints exactly one "listening on" line, serves --root for --user/--password, exits cleanly on SIGTERM', async () => {
    const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'fnc-root-'));
    try {
      await fsp.writeFile(path.join(root, 'hello.txt'), 'from disk');
      const { child, ready, stdout } = run(
        ['--port', '0', '--root', root, '--user', 'u1', '--password', 'pw1'],
        false,
      );
      const line = await ready;
      expect(line).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
      const url = line.slice('listening on '.length);
      const res = await fetch(`${url}/remote.php/dav/files/u1/hello.txt`, {
        headers: { Authorization: basic('u1', 'pw1') },
      });
      expect(await res.text()).toBe('from disk');
      const put = await fetch(`${url}/remote.php/dav/files/u1/new.txt`, {
        method: 'PUT',
        headers: { Authorization: basic('u1', 'pw1') },
        body: 'written',
      });
      expect(put.status).toBe(201);
      expect(await fsp.readFile(path.join(root, 'new.txt'), 'utf8')).toBe('written');
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      expect(code).toBe(0);
      expect(stdout()).toBe(`${line}\n`);
      // The root is the caller's: it stays.
      expect(await fsp.readFile(path.join(root, 'hello.txt'), 'utf8')).toBe('from disk');
    } finally {
      await fsp.rm(root, { recursive: true, force: true });
    }
  });

  it.each([['SIGTERM']] as const)(
    'runs through npm run on the given port; %s to npm stops the server itself',
    async (signal) => {
      const port = await freePort();
      const { child, ready } = run(['--port', String(port)], true);
      expect(await ready).toBe(`listening on http://127.0.0.1:${port}`);
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
      // No orphan keeps serving: the port refuses connections once npm is gone.
      await new Promise((r) => setTimeout(r, 300));
      await expect(fetch(`http://127.0.0.1:${port}/status.php`)).rejects.toThrow();
    },
  );

  it('exits 0 on SIGINT', async () => {
    const { child, ready } = run(['--port', '0'], false);
    await ready;
    const exited = once(child, 'exit');
    child.kill('SIGINT');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
  });

  it('refuses a bad --port', async () => {
    const child = spawn(
      path.join(repo, 'node_modules/.bin/tsx'),
      ['fakes/nextcloud-main.ts', '--port', 'x'],
      {
        cwd: repo,
      },
    );
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(2);
  });
});
