/**
 * `broker fetch` of several files in one command (cli/client/transfer/fetch-many.ts): each file
 * is fetched as if alone (its own read call, wall decision and audit records), one answer
 * lists every file, and a file that fails does not stop the others but sets the exit code.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { clientEnv, runCli, tempStage } from '../../../support/processes.js';
import { until } from '../../../support/until.js';

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

const names = ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt', 'f.txt'];

describe('broker fetch INSTANCE:PATH INSTANCE:PATH…', () => {
  it('fetches every file, each its own ticket and audit record, in one answer', async () => {
    for (const name of names) await broker.fake.writeFile(`Many/${name}`, `content of ${name}`);
    await broker.grant([{ path: 'Many', mode: 'read' }]);
    const before = broker.auditLines().length;
    const run = await runCli(
      ['fetch', ...names.map((n) => `personal:Many/${n}`)],
      clientEnv(broker.url, tempStage('many')),
    );
    expect(run.code).toBe(ExitCode.ok);
    const files = run.json.files as { target: string; status: string; local_path: string }[];
    expect(run.json.status).toBe('ok');
    expect(files.map((f) => f.target)).toEqual(names.map((n) => `personal:Many/${n}`));
    for (const [i, file] of files.entries()) {
      expect(file.status).toBe('fetched');
      expect(readFileSync(file.local_path, 'utf8')).toBe(`content of ${names[i] ?? ''}`);
    }
    // A download's outcome is written once its stream ended; the CLI may exit first.
    const blobsOf = () =>
      broker
        .auditLines()
        .slice(before)
        .filter((l) => l.tool === 'blob_get' && l.event === 'outcome');
    await until('every download’s outcome line', () => blobsOf().length >= names.length);
    const audited = broker.auditLines().slice(before);
    const reads = audited.filter((l) => l.tool === 'read' && l.event === 'outcome');
    const blobs = blobsOf();
    expect(reads).toHaveLength(names.length);
    expect(blobs.map((l) => l.path).sort()).toEqual(names.map((n) => `Many/${n}`));
  });

  it('a refused file fails alone: the others are fetched, the exit code is the refusal', async () => {
    await broker.fake.writeFile('Elsewhere/secret.txt', 'not granted');
    await broker.fake.writeFile('Many/g.txt', 'granted');
    const run = await runCli(
      ['fetch', 'personal:Many/g.txt', 'personal:Elsewhere/secret.txt'],
      clientEnv(broker.url, tempStage('many-refused')),
    );
    expect(run.code).toBe(ExitCode.refused);
    expect(run.json).toMatchObject({ status: 'failed' });
    expect(run.json.error).toMatch(/1 of 2 files could not be fetched \(personal:Elsewhere/);
    const [granted, refused] = run.json.files as Record<string, unknown>[];
    expect(granted).toMatchObject({ target: 'personal:Many/g.txt', status: 'fetched' });
    expect(refused).toMatchObject({
      target: 'personal:Elsewhere/secret.txt',
      status: 'failed',
      exit_code: ExitCode.refused,
    });
    expect(readFileSync(granted?.local_path as string, 'utf8')).toBe('granted');
  });

  it('several files take no local path', async () => {
    const run = await runCli(
      ['fetch', 'personal:Many/a.txt', 'personal:Many/b.txt', './here.txt'],
      clientEnv(broker.url, tempStage('many-usage')),
    );
    expect(run.code).toBe(ExitCode.usage);
    expect(run.json.error).toMatch(/several INSTANCE:PATH takes no local path \("\.\/here\.txt"\)/);
  });
});
