/**
 * Attack: failed logins over the audit budget are lost at a stop (issue "Nothing lost,
 * round four", item 5). The broker writes at most 20 `auth_failed` lines a minute and
 * counts the rest into the next one; 30 bad `/metrics` tokens and then a clean stop left
 * 10 attempts in no record. Now every stop (SIGTERM, SIGINT, `quit` on the console)
 * writes the count before `stop` and before the log closes. `broker serve` as a
 * subprocess, its audit log read from disk after it exited.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { brokerEnv, spawnBroker, type BrokerChild } from '../../support/processes.js';

const METRICS_TOKEN = 'm'.repeat(40);
const ATTEMPTS = 30;

let fake: FakeNextcloud;
beforeAll(async () => {
  fake = await startFakeNextcloud();
});
afterAll(async () => {
  await fake.close();
});

/** `broker serve` with /metrics on, in a fresh folder; returns it and its data folder. */
async function serve(): Promise<{ broker: BrokerChild; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'broker-auth-flush-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'server: { host: 127.0.0.1, port: 0, allowed_hosts: [localhost, 127.0.0.1] }',
      'tokens: { agent_env: BENCH_AGENT_TOKEN, transfer_env: BENCH_TRANSFER_TOKEN, metrics_env: FLUSH_METRICS_TOKEN }',
      'approval: console',
      `data_dir: ${JSON.stringify(join(dir, 'data'))}`,
      'logging: { level: info }',
      'instances:',
      `  personal: { url: ${JSON.stringify(fake.url)}, username: alice, app_password_env: BENCH_NC_PASSWORD }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const broker = await spawnBroker(config, {
    env: { ...brokerEnv(), FLUSH_METRICS_TOKEN: METRICS_TOKEN },
  });
  return { broker, dir };
}

function records(dir: string): Record<string, unknown>[] {
  return readFileSync(join(dir, 'data', 'audit.log'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const stops: [string, (b: BrokerChild) => void][] = [
  ['SIGTERM', (b) => b.child.kill('SIGTERM')],
  ['SIGINT', (b) => b.child.kill('SIGINT')],
  ['quit on the console', (b) => b.type('quit')],
];

describe('attack: 30 bad /metrics tokens, then a clean stop', () => {
  it.each(stops)('%s: every attempt is in the record, counted before `stop`', async (_, stop) => {
    const { broker, dir } = await serve();
    try {
      for (let i = 0; i < ATTEMPTS; i += 1) {
        const res = await fetch(`${broker.url}/metrics`, {
          headers: { authorization: `Bearer wrong-${String(i).padStart(36, '0')}` },
        });
        expect(res.status).toBe(401);
      }
      stop(broker);
      expect(await broker.exited).toBe(0);
      const lines = records(dir);
      const failed = lines.filter((l) => l.event === 'auth_failed');
      const accounted = failed.reduce(
        (n, l) =>
          n + (l.summary === true ? 0 : 1) + (typeof l.suppressed === 'number' ? l.suppressed : 0),
        0,
      );
      expect(accounted).toBe(ATTEMPTS);
      const summary = failed.find((l) => l.summary === true);
      expect(summary).toMatchObject({ surface: 'metrics', suppressed: ATTEMPTS - 20 });
      // Written before the stop record, which is the log's last.
      expect(lines.at(-1)?.event).toBe('stop');
      expect(lines.indexOf(summary as Record<string, unknown>)).toBeLessThan(lines.length - 1);
      // Never the token presented.
      expect(readFileSync(join(dir, 'data', 'audit.log'), 'utf8')).not.toContain('wrong-');
    } finally {
      await broker.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
