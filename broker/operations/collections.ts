/**
 * Calendars and address books through the one pipeline (docs/contracts.md, "Resources
 * beyond files"): list the collections of a kind, read a calendar's events in a window,
 * create one event, search one address book. Each is `Pipeline.run` with its wall op, so
 * each is checked, audited before it runs, and answered with the canonical name the wall
 * returned; only the steps below hold a Nextcloud client.
 */
import { randomUUID } from 'node:crypto';
import type { CallContext } from '../base/call.js';
import { eventUid } from '../nextcloud/calendar-create.js';
import type { CollectionKind } from '../base/domain.js';
import type { Outcome, Pipeline } from './pipeline.js';
import type {
  CalendarEvent,
  Collection,
  Contact,
  CreatedEvent,
  EventWindow,
  NewEvent,
} from '../nextcloud/client.js';

export const EVENTS_PAGE_SIZE = 100;
export const CONTACTS_LIMIT = 25;

export interface CollectionListing {
  kind: CollectionKind;
  /** Listed under the instance's discovery policy: every name, no grant needed. */
  discovery: boolean;
  collections: Collection[];
  /** Granted names the server does not list (renamed or deleted since). */
  missing: string[];
}

export class CollectionOperations {
  readonly #pipeline: Pipeline;

  constructor(pipeline: Pipeline) {
    this.#pipeline = pipeline;
  }

  collections(
    ctx: CallContext,
    args: { instance: string; kind: CollectionKind },
  ): Promise<Outcome<CollectionListing>> {
    return this.#pipeline.run(
      ctx,
      { op: 'collections', instance: args.instance, kind: args.kind },
      async (client, allowed) => {
        const all = await client.collections(args.kind, allowed.signal);
        if (allowed.discovery)
          return { kind: args.kind, discovery: true, collections: all, missing: [] };
        // Security: without discovery, only the names the owner granted are shown.
        const granted = new Set(allowed.paths);
        const collections = all.filter((c) => granted.has(c.name));
        const listed = new Set(collections.map((c) => c.name));
        const missing = allowed.paths.filter((n) => !listed.has(n));
        return { kind: args.kind, discovery: false, collections, missing };
      },
      { describe: (v) => ({ collections: v.collections.length, missing: v.missing.length }) },
    );
  }

  events(
    ctx: CallContext,
    args: {
      instance: string;
      calendar: string;
      window: EventWindow;
      cursor?: string | undefined;
      includeText: boolean;
    },
  ): Promise<Outcome<{ calendar: string; events: CalendarEvent[]; next?: string }>> {
    return this.#pipeline.run(
      ctx,
      collectionOp(args.instance, 'calendar', args.calendar, 'read'),
      async (client, allowed) => {
        const calendar = allowed.paths[0] ?? '';
        const page = await client.calendarEvents(
          calendar,
          args.window,
          { cursor: args.cursor, pageSize: EVENTS_PAGE_SIZE, includeText: args.includeText },
          allowed.signal,
        );
        return page.next === undefined
          ? { calendar, events: page.events }
          : { calendar, events: page.events, next: page.next };
      },
      {
        intent: { start: args.window.start, end: args.window.end, include_text: args.includeText },
        describe: (v) => ({ events: v.events.length, more: v.next !== undefined }),
      },
    );
  }

  createEvent(
    ctx: CallContext,
    args: { instance: string; calendar: string; event: NewEvent },
  ): Promise<Outcome<{ calendar: string; created: CreatedEvent }>> {
    const uuid = randomUUID();
    return this.#pipeline.run(
      ctx,
      collectionOp(args.instance, 'calendar', args.calendar, 'create'),
      async (client, allowed) => {
        const calendar = allowed.paths[0] ?? '';
        return {
          calendar,
          created: await client.createEvent(calendar, { ...args.event, uuid }, allowed.signal),
        };
      },
      {
        // Never the title or text: the audit log records what was done, not content. The
        // UID is written before the PUT is sent, so reconciliation knows the event even
        // when the operation fails after it.
        intent: { start: args.event.start, end: args.event.end, uid: eventUid(uuid) },
        describe: (v) => ({
          object: v.created.object,
          uid: v.created.event.uid,
          changed: v.created.changed,
          // What undo needs: the event, and its ETag (an edit since changes it).
          effect: {
            kind: 'event',
            calendar: v.calendar,
            object: v.created.object,
            etag: v.created.etag,
          },
        }),
      },
    );
  }

  searchContacts(
    ctx: CallContext,
    args: { instance: string; addressbook: string; query: string; includeText: boolean },
  ): Promise<Outcome<{ addressbook: string; contacts: Contact[]; truncated: boolean }>> {
    return this.#pipeline.run(
      ctx,
      collectionOp(args.instance, 'contacts', args.addressbook, 'read'),
      async (client, allowed) => {
        const addressbook = allowed.paths[0] ?? '';
        const found = await client.searchContacts(
          addressbook,
          args.query,
          { limit: CONTACTS_LIMIT, includeText: args.includeText },
          allowed.signal,
        );
        return { addressbook, ...found };
      },
      {
        intent: { include_text: args.includeText },
        describe: (v) => ({ contacts: v.contacts.length, truncated: v.truncated }),
      },
    );
  }
}

function collectionOp(
  instance: string,
  kind: CollectionKind,
  name: string,
  access: 'read' | 'create',
) {
  return { op: 'collection' as const, instance, kind, name, access };
}
