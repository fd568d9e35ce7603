/**
 * The daemon's own lifecycle, in process: start (audit `start`, pending requests
 * discarded and announced), the periodic sweep, a graceful stop that lets in-flight
 * requests finish, and the deadline on slow request bodies.
 */
import { connect as netConnect } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { authFailureRecorder } from '../../broker/surfaces/http/auth-failures.js';
import { startBroker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

describe('start and sweep', () => {
  it('expires a pending request past pending_timeout and announces it', async () => {
    const broker = await startBroker();
    try {
      const agent = await broker.agent();
      const answer = await call(agent, 'request_access', {
        instance: 'personal',
        reason: 'x',
        items: [{ path: 'Slow', mode: 'read' }],
      });
      broker.clock.offset += 13 * 3_600_000;
      await broker.server.sweep();
      expect(broker.store.getRequest(answer.request as number)?.state).toBe('expired');
      expect(
        broker.gateway.announcements.some((a) =>
          a.includes(`Request ${answer.request as number} expired without a decision`),
        ),
      ).toBe(true);
      expect(
        broker.auditLines().some((l) => l.event === 'expire' && l.request === answer.request),
      ).toBe(true);
      expect(await call(agent, 'check_access', { request: answer.request })).toMatchObject({
        status: 'ok',
        state: 'expired',
      });
    } finally {
      await broker.close();
    }
  });

  it('attack: the expiry notice shows agent paths escaped and capped, like every owner message', async () => {
    const broker = await startBroker();
    try {
      const long = (i: number): string =>
        `Deep/${Array.from({ length: 5 }, () => `${i}`.padEnd(200, 'z')).join('/')}/f.txt`;
      const items = [
        { path: 'Docs/p\u0430yroll', mode: 'read' as const },
        ...Array.from({ length: 30 }, (_, i) => ({ path: long(i), mode: 'read' as const })),
      ];
      await broker.grant(items);
      broker.clock.offset += 25 * 3_600_000;
      await broker.server.sweep();
      const notice = broker.gateway.announcements.find((a) => a.startsWith('Expired: 31 grants.'));
      expect(notice).toBeDefined();
      // Escaped: the look-alike letter is shown as a code point, never raw.
      expect(notice).toContain('Docs/p\\u{0430}yroll');
      expect(notice).not.toContain('\u0430');
      // Capped: 20 lines and a count, not 31 paths of 1,000 characters.
      expect(notice?.length ?? 0).toBeLessThan(4_000);
      expect(notice).toContain('… and 11 more grants (request 1)');
    } finally {
      await broker.close();
    }
  });

  it('the sweep runs on its timer', async () => {
    const broker = await startBroker({ sweepIntervalMs: 20 });
    try {
      await broker.grant([{ path: 'Tick', mode: 'read' }]);
      broker.clock.offset += 25 * 3_600_000;
      await new Promise((r) => setTimeout(r, 200));
      expect(broker.store.activeGrants()).toEqual([]);
      expect(broker.auditLines().some((l) => l.event === 'expire')).toBe(true);
    } finally {
      await broker.close();
    }
  });
});

describe('graceful stop', () => {
  it('stops accepting but lets an in-flight call finish', async () => {
    const broker = await startBroker();
    try {
      await broker.fake.mkdir('Drain');
      await broker.grant([{ path: 'Drain', mode: 'read' }]);
      const agent = await broker.agent();
      broker.fake.faults.slowMs = 400;
      const inFlight = call(agent, 'list', { instance: 'personal', path: 'Drain' });
      await new Promise((r) => setTimeout(r, 100));
      const closing = broker.server.close();
      expect(await inFlight).toMatchObject({ status: 'ok' });
      await closing;
      await expect(fetch(`${broker.url}/health`)).rejects.toThrow();
    } finally {
      await broker.close();
    }
  });
});

describe('slow request bodies', () => {
  it('drops a request whose body does not arrive within request_timeout_ms', async () => {
    const broker = await startBroker({ requestTimeoutMs: 300 });
    try {
      const { port } = new URL(broker.url);
      const started = Date.now();
      const closedAfter = await new Promise<number>((resolve, reject) => {
        const socket = netConnect(Number(port), '127.0.0.1', () => {
          socket.write(
            'POST /mcp HTTP/1.1\r\nHost: localhost\r\n' +
              `Authorization: Bearer ${broker.config.tokens.agent}\r\n` +
              'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc":',
          );
        });
        socket.on('data', () => undefined);
        socket.on('close', () => resolve(Date.now() - started));
        socket.on('error', reject);
        setTimeout(() => reject(new Error('socket still open')), 5_000);
      });
      expect(closedAfter).toBeGreaterThanOrEqual(250);
      expect(closedAfter).toBeLessThan(3_000);
    } finally {
      await broker.close();
    }
  });
});

describe('auth failure flood', () => {
  it('audits at most perWindow failures per window, then records how many were suppressed', () => {
    let now = 0;
    const audited: Record<string, unknown>[] = [];
    const record = authFailureRecorder({
      now: () => now,
      audit: (f) => Promise.resolve(audited.push(f)),
      log: () => undefined,
      perWindow: 3,
      windowMs: 1_000,
    });
    for (let i = 0; i < 10; i += 1) record('agent', 'mismatch', '127.0.0.1');
    expect(audited.length).toBe(3);
    now = 1_000;
    record('transfer', 'missing', undefined);
    expect(audited.at(-1)).toEqual({
      surface: 'transfer',
      reason: 'missing',
      remote: null,
      suppressed: 7,
    });
  });

  it('attack: failures over the budget, then a stop: the count is written before the log closes', async () => {
    const audited: Record<string, unknown>[] = [];
    const record = authFailureRecorder({
      now: () => 0,
      audit: (f) => Promise.resolve(audited.push(f)),
      log: () => undefined,
      perWindow: 20,
    });
    for (let i = 0; i < 30; i += 1) record('metrics', 'mismatch', '127.0.0.1');
    expect(audited).toHaveLength(20);
    await record.flush();
    expect(audited.at(-1)).toEqual({
      surface: 'metrics',
      reason: 'mismatch',
      remote: '127.0.0.1',
      suppressed: 10,
      summary: true,
    });
    // Nothing more is held: a second flush writes nothing.
    await record.flush();
    expect(audited).toHaveLength(21);
  });

  it('property: every failure is one line or one unit of exactly one count, whatever the times, after a flush', async () => {
    const failures = fc.array(
      fc.record({
        at: fc.integer({ min: 0, max: 5_000 }),
        surface: fc.constantFrom('agent' as const, 'transfer' as const, 'metrics' as const),
      }),
      { maxLength: 200 },
    );
    await fc.assert(
      fc.asyncProperty(failures, async (events) => {
        let now = 0;
        const audited: { suppressed?: number; summary?: true }[] = [];
        const record = authFailureRecorder({
          now: () => now,
          audit: (f) => Promise.resolve(audited.push(f)),
          log: () => undefined,
          perWindow: 5,
          windowMs: 1_000,
        });
        for (const e of [...events].sort((a, b) => a.at - b.at)) {
          now = e.at;
          record(e.surface, 'mismatch', undefined);
        }
        await record.flush();
        const accounted = audited.reduce(
          (n, line) => n + (line.summary === true ? 0 : 1) + (line.suppressed ?? 0),
          0,
        );
        expect(accounted).toBe(events.length);
      }),
    );
  });
});
