/**
 * The calendar trash bin as Nextcloud 34.0.1 and 29.0.5 keep it (docs/nextcloud-
 * behaviour.md "The calendar trash bin"): a deleted event leaves its calendar for
 * `trashbin/objects/<n>.ics` (`n` a number of the server's, not the name) with its ETag,
 * and goes back under its own name. Inside the server the object is renamed
 * `<name>-deleted.ics`, so a second object of the same name cannot be deleted while
 * the first is in the trash bin, and an item cannot be restored onto a taken name.
 */
import type { FakeCollection, StoredObject } from './collections.js';

export interface TrashedEvent {
  /** The item's number: its href is `trashbin/objects/<number>.ics`. */
  readonly number: number;
  readonly calendar: FakeCollection;
  /** Its name in the calendar. */
  readonly name: string;
  readonly object: StoredObject;
  /** Unix ms. */
  readonly deletedAt: number;
}

export class CalendarTrash {
  readonly #items = new Map<number, TrashedEvent>();
  #next = 1;

  constructor(readonly now: () => number) {}

  list(): TrashedEvent[] {
    return [...this.#items.values()];
  }

  get(number: number): TrashedEvent | undefined {
    return this.#items.get(number);
  }

  /** Moves an event into the trash bin; `taken` when one of that name is already there. */
  trash(calendar: FakeCollection, name: string): TrashedEvent | 'taken' | undefined {
    const object = calendar.objects.get(name);
    if (object === undefined) return undefined;
    if (this.list().some((i) => i.calendar === calendar && i.name === name)) return 'taken';
    const item = { number: this.#next++, calendar, name, object, deletedAt: this.now() };
    this.#items.set(item.number, item);
    calendar.objects.delete(name);
    return item;
  }

  /** Puts an item back under its own name; `taken` when that name is in use. */
  restore(number: number): TrashedEvent | 'taken' | undefined {
    const item = this.#items.get(number);
    if (item === undefined) return undefined;
    if (item.calendar.objects.has(item.name)) return 'taken';
    item.calendar.objects.set(item.name, item.object);
    this.#items.delete(number);
    return item;
  }
}
