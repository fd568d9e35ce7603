/**
 * Which audit lines an operation waits to be durable (docs/contracts.md, "Durability"):
 * its intent always, before Nextcloud is asked; its outcome only when the step may have
 * changed something. The outcome of a step that changed nothing (a list, a read ticket)
 * is answered once written (AuditSink.appendWritten), its fsync following.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../broker/audit/events.js';
import type { AuditSink } from '../../broker/audit/sink.js';
import { memoryLogger } from '../../broker/base/log.js';
import { createScrubber } from '../../broker/base/scrub.js';
import { FileOperations } from '../../broker/operations/files.js';
import { InFlight } from '../../broker/operations/in-flight.js';
import { Pipeline } from '../../broker/operations/pipeline.js';
import type { NextcloudPort } from '../../broker/operations/ports.js';
import { Refusals } from '../../broker/operations/refusals.js';
import { SpaceGuard } from '../../broker/operations/space-guard.js';
import { readOnly } from '../../broker/operations/step.js';
import { nodeTimers } from '../../broker/operations/timers.js';
import { startBroker, type Broker } from '../../support/daemon.js';

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
  await broker.fake.mkdir('Kept');
  await broker.grant([{ path: 'Kept', mode: 'write' }]);
});
afterAll(async () => {
  await broker.close();
});

/** The pipeline over the broker's grants and audit log, recording how each line went. */
function recorded(client: Partial<NextcloudPort>) {
  const lines: { how: 'append' | 'appendWritten'; event: string; tool: unknown }[] = [];
  const note = (how: 'append' | 'appendWritten', event: AuditEvent) =>
    lines.push({ how, event: event.event, tool: (event as { tool?: unknown }).tool });
  const audit: AuditSink = {
    append: (event) => (note('append', event), broker.audit.append(event)),
    appendWritten: (event) => (note('appendWritten', event), broker.audit.appendWritten(event)),
  };
  const scrub = createScrubber([]);
  const pipeline = new Pipeline({
    grants: broker.store,
    audit,
    instances: broker.config.instances,
    clients: new Map([
      ['personal', { recording: (_s: unknown, run: () => unknown) => run(), ...client } as never],
    ]),
    inFlight: new InFlight({ now: Date.now, timers: nodeTimers }),
    refusals: new Refusals({ now: Date.now, write: (e) => audit.append(e).then(() => true) }),
    logger: memoryLogger(scrub),
    scrub,
    now: Date.now,
  });
  const space = new SpaceGuard({ now: Date.now, retention: new Map() });
  return { files: new FileOperations(pipeline, space), lines };
}

const ctx = (tool: string) => ({ surface: 'agent' as const, tool, correlationId: `c-${tool}` });

describe('an operation that changed nothing does not wait for its outcome fsync', () => {
  it('list: the intent is appended durable before Nextcloud is asked, the outcome written', async () => {
    let seenAtList: string[] = [];
    const { files, lines } = recorded({
      list: () => {
        seenAtList = lines.map((l) => `${l.how} ${l.event}`);
        return Promise.resolve({ entries: [] });
      },
    });
    const outcome = await files.list(ctx('list'), { instance: 'personal', path: 'Kept' });
    expect(outcome.ok).toBe(true);
    expect(seenAtList).toEqual(['append intent']);
    expect(lines.map((l) => `${l.how} ${l.event}`)).toEqual([
      'append intent',
      'appendWritten outcome',
    ]);
  });

  it('a failed list too: its outcome is written, not waited for', async () => {
    const { files, lines } = recorded({ list: () => Promise.reject(new Error('down')) });
    const outcome = await files.list(ctx('list'), { instance: 'personal', path: 'Kept' });
    expect(outcome.ok).toBe(false);
    expect(lines.map((l) => `${l.how} ${l.event}`)).toEqual([
      'append intent',
      'appendWritten outcome',
    ]);
  });

  it('mkdir changed something: its outcome is durable before the answer', async () => {
    const { files, lines } = recorded({ mkdir: () => Promise.resolve({ fileId: null }) });
    const outcome = await files.mkdir(ctx('mkdir'), { instance: 'personal', path: 'Kept/new' });
    expect(outcome.ok).toBe(true);
    expect(lines.map((l) => `${l.how} ${l.event}`)).toEqual(['append intent', 'append outcome']);
  });

  it('only the reading operations count as changing nothing', () => {
    const at = { instance: 'personal', path: 'Kept' };
    expect(readOnly({ op: 'list', ...at })).toBe(true);
    expect(readOnly({ op: 'search', ...at })).toBe(true);
    expect(readOnly({ op: 'read', ...at })).toBe(true);
    expect(readOnly({ op: 'write', ...at })).toBe(false);
    expect(readOnly({ op: 'move', instance: 'personal', from: 'a', to: 'b' })).toBe(false);
    expect(
      readOnly({
        op: 'collection',
        instance: 'personal',
        kind: 'calendar',
        name: 'x',
        access: 'create',
      }),
    ).toBe(false);
    expect(
      readOnly({
        op: 'collection',
        instance: 'personal',
        kind: 'calendar',
        name: 'x',
        access: 'read',
      }),
    ).toBe(true);
  });
});
