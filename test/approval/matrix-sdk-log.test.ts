/**
 * The SDK's log lines in the broker's log: one message (`matrix-sdk`) for every line,
 * the SDK's child loggers as a `scope` field, levels folded to warn and debug. Also
 * through the real matrix-js-sdk, whose sync loop logs on a child logger.
 */
import { ClientEvent, createClient, MatrixScheduler, SyncState } from 'matrix-js-sdk';
import { describe, expect, it } from 'vitest';
import { toSdkLogger } from '../../broker/approval/matrix/sdk-log.js';
import { memoryLogger } from '../../broker/base/log.js';
import { startFakeHomeserver } from '../../fakes/homeserver.js';

type Line = { level: string; msg: string; scope?: string; line: string };

const parsed = (lines: string[]): Line[] => lines.map((l) => JSON.parse(l) as Line);

describe('toSdkLogger', () => {
  it('keeps the message matrix-sdk for child loggers and names them in scope', () => {
    const logger = memoryLogger();
    const sdk = toSdkLogger(logger);
    sdk.warn('top');
    sdk.getChild('sync').error('sync failed', 42);
    sdk.getChild('sync').getChild('[queue]').info('nested');
    expect(parsed(logger.lines)).toEqual([
      { ts: expect.any(String), level: 'warn', msg: 'matrix-sdk', line: 'top' },
      {
        ts: expect.any(String),
        level: 'warn',
        msg: 'matrix-sdk',
        scope: 'sync',
        line: 'sync failed 42',
      },
      {
        ts: expect.any(String),
        level: 'debug',
        msg: 'matrix-sdk',
        scope: 'sync [queue]',
        line: 'nested',
      },
    ]);
  });

  it('caps the scope', () => {
    const logger = memoryLogger();
    toSdkLogger(logger).getChild('x'.repeat(500)).warn('long');
    expect(parsed(logger.lines)[0]?.scope).toBe('x'.repeat(100));
  });
});

describe('through matrix-js-sdk', () => {
  it('the sync loop logs under matrix-sdk, scope sync', async () => {
    const bot = '@bot:hs.test';
    const token = 'bot-token-0123456789abcdef0123456789';
    const hs = await startFakeHomeserver({ users: { [bot]: token } });
    const logger = memoryLogger();
    const client = createClient({
      baseUrl: hs.url,
      accessToken: token,
      userId: bot,
      scheduler: new MatrixScheduler(() => -1),
      logger: toSdkLogger(logger),
    });
    try {
      const prepared = new Promise<void>((resolve) => {
        client.on(ClientEvent.Sync, (state) => {
          if (state === SyncState.Prepared) resolve();
        });
      });
      await client.startClient({ initialSyncLimit: 1, pollTimeout: 200 });
      await prepared;
    } finally {
      client.stopClient();
      await hs.close();
    }
    const lines = parsed(logger.lines);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((l) => l.msg === 'matrix-sdk')).toBe(true);
    expect(lines.some((l) => l.scope === 'sync')).toBe(true);
  });
});
