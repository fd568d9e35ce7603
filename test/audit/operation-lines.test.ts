/**
 * An operation's audit lines are exactly as broker/audit/events.ts declares them: every
 * intent and outcome the daemon writes, for every verb (files, transfers and their blobs,
 * checkouts, calendars and address books, refusals after the wall), parses with the strict
 * line schemas, so a field no schema names (a misspelt one) fails here.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntentLineSchema, OutcomeLineSchema, UndoLineSchema } from '../../broker/audit/events.js';
import { getBlob, putBlob } from '../../support/blobs.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { ics } from '../../support/ical.js';
import { call } from '../../support/mcp.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';

let broker: Broker;
let agent: Client;
let transfer: Client;
const at = { instance: 'personal' };

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
  transfer = await broker.transfer();
  const { fake } = broker;
  await fake.writeFile('Lines/a.txt', Buffer.from('hello'));
  await fake.writeFile('Lines/sub/b.txt', Buffer.from('world'));
  fake.createCalendar('personal');
  fake.addObject(
    'calendar',
    'personal',
    'one.ics',
    ics('one', ['SUMMARY:One', 'DTSTART:20261214T090000Z', 'DTEND:20261214T100000Z']),
  );
  fake.createAddressBook('contacts');
  await broker.grant([
    { path: 'Lines', mode: 'write' },
    { kind: 'calendar', path: 'personal', mode: 'write' },
    { kind: 'contacts', path: 'contacts', mode: 'read' },
  ]);
});
afterAll(() => broker.close());

describe('every operation line is as declared', () => {
  it('files, transfers, checkouts, collections and refusals after the wall', async () => {
    await call(agent, 'list', { ...at, path: 'Lines' });
    await call(agent, 'search', { ...at, path: 'Lines', query: 'b' });
    await call(agent, 'mkdir', { ...at, path: 'Lines/new' });
    await call(agent, 'move', { ...at, from: 'Lines/sub/b.txt', to: 'Lines/new/b.txt' });
    await call(agent, 'trash', { ...at, path: 'Lines/new/b.txt' });
    await call(agent, 'collections', { ...at, kind: 'calendar' });
    const week = { start: '2026-12-14T00:00:00Z', end: '2026-12-21T00:00:00Z' };
    await call(agent, 'calendar_events', { ...at, calendar: 'personal', ...week });
    await call(agent, 'calendar_create_event', {
      ...at,
      calendar: 'personal',
      title: 'Two',
      start: '2026-12-15T09:00:00Z',
      end: '2026-12-15T10:00:00Z',
    });
    await call(agent, 'contacts_search', { ...at, addressbook: 'contacts', query: 'zoe' });
    await call(agent, 'list', { ...at, path: 'Lines/a.txt' });

    const read = await call(transfer, 'read', { ...at, path: 'Lines/a.txt' });
    await getBlob(broker.url, read.blob_url as string, TRANSFER_TOKEN);
    const body = Buffer.from('new file');
    const write = await call(transfer, 'write', {
      ...at,
      path: 'Lines/c.txt',
      size: body.length,
      if_none_match: '*',
      sha256: createHash('sha256').update(body).digest('hex'),
    });
    expect(write.status).toBe('ok');
    await putBlob(broker.url, write.blob_url as string, TRANSFER_TOKEN, body);
    const checkout = await call(transfer, 'checkout', { ...at, path: 'Lines/a.txt' });
    expect(checkout.status).toBe('ok');
    await call(transfer, 'checkin', {
      ...at,
      path: 'Lines/a.txt',
      lock_token: checkout.lock_token,
      abandon: true,
    });

    const lines = broker.auditLines().filter((l) => l.event === 'intent' || l.event === 'outcome');
    const tools = [...new Set(lines.map((l) => String(l.tool)))].sort();
    expect(tools).toEqual([
      'blob_get',
      'blob_put',
      'calendar_create_event',
      'calendar_events',
      'checkin',
      'checkout',
      'collections',
      'contacts_search',
      'list',
      'mkdir',
      'move',
      'read',
      'search',
      'trash',
      'write',
    ]);
    expect(lines.some((l) => l.outcome === 'refused' || l.outcome === 'error')).toBe(true);
    const wrong = lines.flatMap(({ seq: _seq, ts: _ts, prev: _prev, hash: _hash, ...line }) => {
      const schema = line.event === 'intent' ? IntentLineSchema : OutcomeLineSchema;
      const parsed = schema.safeParse(line);
      return parsed.success ? [] : [{ line, issues: parsed.error.issues.map((i) => i.message) }];
    });
    expect(wrong).toEqual([]);
    // What undo reads: every change an operation made says what it was.
    const effects = lines
      .filter((l) => l.event === 'outcome' && l.outcome === 'ok' && l.effect !== undefined)
      .map((l) => [l.tool, (l.effect as { kind: string }).kind]);
    expect(effects).toEqual(
      expect.arrayContaining([
        ['mkdir', 'created'],
        ['move', 'moved'],
        ['calendar_create_event', 'event'],
        ['blob_put', 'created'],
        ['checkout', 'locked'],
      ]),
    );
  });

  it('undo lines, its intent and outcome, are as declared', async () => {
    const request = broker.store.activeGrants()[0]?.requestId;
    await broker.gateway.decide(`undo --request ${String(request)} --dry-run`);
    await broker.gateway.decide(`undo --request ${String(request)}`);
    const lines = broker.auditLines().filter((l) => l.event === 'undo');
    expect(new Set(lines.map((l) => l.stage))).toEqual(new Set(['intent', 'outcome']));
    const wrong = lines.flatMap(({ seq: _seq, ts: _ts, prev: _prev, hash: _hash, ...line }) => {
      const parsed = UndoLineSchema.safeParse(line);
      return parsed.success ? [] : [{ line, issues: parsed.error.issues.map((i) => i.message) }];
    });
    expect(wrong).toEqual([]);
  });
});
