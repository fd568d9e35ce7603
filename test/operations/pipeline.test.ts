/**
 * Attacks on the operation pipeline: an unwritable audit log, a revoke landing between
 * the check and the use, secrets planted where errors echo them, unexpected exceptions,
 * and a tool module reaching for the Nextcloud client directly.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../broker/base/log.js';
import { Pipeline } from '../../broker/operations/pipeline.js';
import { FileOperations } from '../../broker/operations/files.js';
import { SpaceGuard } from '../../broker/operations/space-guard.js';
import { InFlight } from '../../broker/operations/in-flight.js';
import { nodeTimers } from '../../broker/operations/timers.js';
import { Refusals } from '../../broker/operations/refusals.js';
import type { NextcloudPort } from '../../broker/operations/ports.js';
import { createScrubber } from '../../broker/base/scrub.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from '../../support/tokens.js';
import { call } from '../../support/mcp.js';

const ROOT = join(import.meta.dirname, '..', '..');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? files(full) : full.endsWith('.ts') ? [full] : [];
  });
}

/** The modules `file` loads at run time: type-only imports are erased by the compiler. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8')
    .replace(/^import\s+type\s[^;]*;/gm, '')
    .replace(/^export\s+type\s+\{[^}]*\}\s+from\s+'[^']+';/gm, '');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1] ?? '');
}

describe('the Nextcloud client is reachable only through the pipeline', () => {
  it('no tool handler module (broker/surfaces/**) or transfer module imports broker/nextcloud', () => {
    const transfer = ['transfer', 'tickets', 'checkouts', 'release', 'blobs', 'hashing', 'unlock'];
    const offenders = [
      ...files(join(ROOT, 'broker/surfaces')),
      ...transfer.map((name) => join(ROOT, 'broker/operations', `${name}.ts`)),
    ].filter((f) => imports(f).some((spec) => /(^|\/)nextcloud(\/|\.js$|$)/.test(spec)));
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });

  it('from the HTTP app, the only part of broker/nextcloud loaded at run time is its error type', () => {
    // Follow relative imports transitively from createServer's module: the client class
    // must not be reachable (main.ts constructs the clients and injects them).
    const seen = new Set<string>();
    const queue = [join(ROOT, 'broker/app.ts')];
    while (queue.length > 0) {
      const file = queue.pop() as string;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const spec of imports(file)) {
        if (!spec.startsWith('.')) continue;
        queue.push(join(file, '..', spec.replace(/\.js$/, '.ts')));
      }
    }
    const reached = [...seen]
      .map((f) => relative(ROOT, f))
      .filter((f) => f.startsWith('broker/nextcloud/'));
    expect(reached.filter((f) => f !== 'broker/nextcloud/errors.ts')).toEqual([]);
    // The walk did reach the surfaces that handle calls (operations are injected).
    expect(seen.has(join(ROOT, 'broker/surfaces/mcp-endpoint.ts'))).toBe(true);
    expect(seen.has(join(ROOT, 'broker/surfaces/blobs.ts'))).toBe(true);
  });
});

describe('revoke between check and use', () => {
  let broker: Broker;
  beforeAll(async () => {
    broker = await startBroker();
  });
  afterAll(async () => {
    await broker.close();
  });
  afterEach(() => broker.onAuditWrite(undefined));

  it.each([
    ['list', { instance: 'personal', path: 'Race' }],
    ['mkdir', { instance: 'personal', path: 'Race/new' }],
    ['move', { instance: 'personal', from: 'Race/a.txt', to: 'Race/b.txt' }],
    ['trash', { instance: 'personal', path: 'Race/a.txt' }],
  ] as const)(
    '%s: a revoke while the intent line is written wins; Nextcloud gets nothing',
    async (tool, args) => {
      await broker.fake.writeFile('Race/a.txt', 'a');
      await broker.grant([{ path: 'Race', mode: 'write' }]);
      const agent = await broker.agent();
      broker.fake.requests.length = 0;
      broker.onAuditWrite((text) => {
        if (text.includes('"event":"intent"')) broker.store.revokeAll();
      });
      const answer = await call(agent, tool, args);
      expect(answer).toMatchObject({ status: 'refused', code: 'grant_revoked', ended_by: 'owner' });
      expect(answer.message).toContain('revoked by the owner at');
      expect(broker.fake.requests).toEqual([]);
      expect(await broker.fake.exists('Race/a.txt')).toBe(true);
      // This call's lines (the sweep may have written a summary of earlier refusals).
      const last = broker
        .auditLines()
        .filter((l) => l.event !== 'refused_summary')
        .at(-1);
      const lines = broker.auditLines().filter((l) => l.correlation_id === last?.correlation_id);
      expect(lines.map((l) => [l.event, l.outcome, l.code])).toEqual([
        ['intent', undefined, undefined],
        ['outcome', 'refused', 'grant_revoked'],
      ]);
    },
  );

  it('an expired grant is refused, as expired, even before the sweep records it', async () => {
    await broker.fake.writeFile('Exp/a.txt', 'a');
    await broker.grant([{ path: 'Exp', mode: 'read' }]);
    const agent = await broker.agent();
    broker.clock.offset += 25 * 3_600_000;
    try {
      const answer = await call(agent, 'list', { instance: 'personal', path: 'Exp' });
      expect(answer).toMatchObject({ status: 'refused', code: 'grant_expired' });
      expect(answer.message).toContain('expired at');
      expect(answer.ended_by).toBeUndefined();
    } finally {
      broker.clock.offset -= 25 * 3_600_000;
    }
  });
});

describe('audit log unavailable', () => {
  let broker: Broker;
  beforeAll(async () => {
    broker = await startBroker();
  });
  afterAll(async () => {
    await broker.close();
  });

  it('refuses every operation and sends nothing to Nextcloud', async () => {
    await broker.fake.writeFile('Au/a.txt', 'a');
    await broker.grant([{ path: 'Au', mode: 'write' }]);
    const agent = await broker.agent();
    const transfer = await broker.transfer();
    const out = await call(transfer, 'checkout', { instance: 'personal', path: 'Au/a.txt' });
    broker.failAudit(true);
    broker.fake.requests.length = 0;
    const refusedAll = [
      await call(agent, 'list', { instance: 'personal', path: 'Au' }),
      await call(agent, 'mkdir', { instance: 'personal', path: 'Au/d' }),
      await call(agent, 'move', { instance: 'personal', from: 'Au/a.txt', to: 'Au/b.txt' }),
      await call(agent, 'trash', { instance: 'personal', path: 'Au/a.txt' }),
      await call(transfer, 'read', { instance: 'personal', path: 'Au/a.txt' }),
      await call(transfer, 'write', {
        instance: 'personal',
        path: 'Au/n.txt',
        size: 1,
        if_none_match: '*',
      }),
      await call(transfer, 'checkout', { instance: 'personal', path: 'Au/a.txt' }),
      await call(transfer, 'checkin', {
        instance: 'personal',
        path: 'Au/a.txt',
        lock_token: out.lock_token,
        size: 1,
      }),
      await call(transfer, 'checkin', {
        instance: 'personal',
        path: 'Au/a.txt',
        lock_token: out.lock_token,
        abandon: true,
      }),
    ];
    for (const answer of refusedAll) {
      expect(answer).toMatchObject({
        status: 'refused',
        code: 'audit_unavailable',
        message: 'audit log unavailable; operation refused',
      });
    }
    const request = await call(agent, 'request_access', {
      instance: 'personal',
      reason: 'x',
      items: [{ path: 'More', mode: 'read' }],
    });
    expect(request).toMatchObject({ status: 'refused', code: 'audit_unavailable' });
    // Security: the unaudited request can never be approved.
    const stored = broker.store.getRequest((broker.gateway.posted.at(-1)?.id ?? 0) + 1);
    expect(stored?.state ?? 'denied').toBe('denied');
    expect(broker.fake.requests).toEqual([]);
    expect(await broker.fake.exists('Au/a.txt')).toBe(true);
  });
});

describe('secrets never leave', () => {
  let broker: Broker;
  beforeAll(async () => {
    broker = await startBroker();
  });
  afterAll(async () => {
    await broker.close();
  });

  const forms = (user: string) => [
    APP_PASSWORD,
    encodeURIComponent(APP_PASSWORD),
    Buffer.from(`${user}:${APP_PASSWORD}`).toString('base64'),
    AGENT_TOKEN,
    TRANSFER_TOKEN,
  ];

  it('a Nextcloud error body echoing the credentials reaches no answer, log or audit line', async () => {
    await broker.grant([{ path: 'Echo', mode: 'write' }]);
    const agent = await broker.agent();
    broker.fake.faults.echoAuth = true;
    broker.fake.faults.status = 500;
    const answers = [
      await call(agent, 'list', { instance: 'personal', path: 'Echo' }),
      await call(agent, 'mkdir', { instance: 'personal', path: 'Echo/x' }),
    ];
    broker.fake.reset();
    // The agent plants the other surface's token (and its own) in paths and reasons.
    answers.push(
      await call(agent, 'list', { instance: 'personal', path: `Echo/${TRANSFER_TOKEN}` }),
    );
    answers.push(await call(agent, 'list', { instance: 'personal', path: `Nope/${AGENT_TOKEN}` }));
    answers.push(
      await call(agent, 'request_access', {
        instance: 'personal',
        reason: `please ${TRANSFER_TOKEN}`,
        items: [{ path: `x/${APP_PASSWORD}`, mode: 'read' }],
      }),
    );
    const everything = [
      JSON.stringify(answers),
      broker.logger.lines.join(''),
      JSON.stringify(broker.auditLines()),
    ].join('\n');
    for (const secret of forms(broker.fake.user)) expect(everything).not.toContain(secret);
    expect(answers[0]?.status).toBe('error');
  });
});

describe('one error boundary', () => {
  it('an unexpected exception becomes a generic error with a correlation id; details only in the scrubbed log', async () => {
    const broker = await startBroker();
    try {
      await broker.grant([{ path: 'Boom', mode: 'write' }]);
      const scrub = createScrubber([APP_PASSWORD]);
      const logger = memoryLogger(scrub);
      const throwing = {
        mkdir: () => Promise.reject(new TypeError(`kaboom with ${APP_PASSWORD}`)),
        recording: (_sink: unknown, run: () => Promise<unknown>) => run(),
      } as unknown as NextcloudPort;
      const pipeline = new Pipeline({
        grants: broker.store,
        audit: broker.audit,
        instances: broker.config.instances,
        clients: new Map([['personal', throwing]]),
        inFlight: new InFlight({ now: Date.now, timers: nodeTimers }),
        refusals: new Refusals({
          now: Date.now,
          write: (event) => broker.audit.append(event).then(() => true),
        }),
        logger,
        scrub,
        now: Date.now,
      });
      const ctx = { surface: 'agent' as const, tool: 'mkdir', correlationId: 'cid-123' };
      const space = new SpaceGuard({ now: Date.now, retention: new Map() });
      const outcome = await new FileOperations(pipeline, space).mkdir(ctx, {
        instance: 'personal',
        path: 'Boom/x',
      });
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.envelope).toMatchObject({
        status: 'error',
        code: 'internal',
        correlation_id: 'cid-123',
      });
      expect(JSON.stringify(outcome.envelope)).not.toContain('kaboom');
      const logged = logger.lines.join('');
      expect(logged).toContain('kaboom');
      expect(logged).toContain('cid-123');
      expect(logged).not.toContain(APP_PASSWORD);
      const lines = broker.auditLines().filter((l) => l.correlation_id === 'cid-123');
      expect(lines.map((l) => [l.event, l.outcome, l.code])).toEqual([
        ['intent', undefined, undefined],
        ['outcome', 'error', 'internal'],
      ]);
    } finally {
      await broker.close();
    }
  });
});
