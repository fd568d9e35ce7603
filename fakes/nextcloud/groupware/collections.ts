/**
 * The calendars and address books of the fake's user, as Nextcloud 29 keeps them: a new
 * user has none; the address book home always holds the two Nextcloud generates (the
 * account directory `z-server-generated--system`, display name "Accounts", with the
 * user's own card, and "recently contacted"), both read-only.
 */
import { randomUUID } from 'node:crypto';

export interface StoredObject {
  data: string;
  etag: string;
  uid: string | undefined;
}

export interface FakeCollection {
  kind: 'calendar' | 'addressbook';
  /** The URI name (the href's last segment). */
  uri: string;
  displayName: string;
  /**
   * Calendars: `principals/users/<user>`, or the sharer's for a calendar shared with the
   * user. Address books: only the account directory tells (`principals/system/system`).
   */
  owner: string | undefined;
  /** Calendars: `VEVENT`, `VTODO`. */
  components: string[];
  readOnly: boolean;
  objects: Map<string, StoredObject>;
}

export interface CollectionOptions {
  displayName?: string;
  /** Default ['VEVENT', 'VTODO'], as `occ dav:create-calendar` makes them. */
  components?: string[];
  /** Another user who shares this calendar with the fake's user (its URI as given). */
  sharedBy?: string;
  /** Calendars: PUT answers 403 (the birthday calendar) — a read-only share answers 404 instead. */
  readOnly?: boolean;
}

export function newEtag(): string {
  return `"${randomUUID().replace(/-/g, '')}"`;
}

export class Groupware {
  /** In creation order; a name may repeat (a shared calendar's URI can equal one of the user's). */
  readonly collections: FakeCollection[] = [];

  readonly #user: string;
  readonly #calendarComponents: readonly string[] = ['VEVENT', 'VTODO'];

  constructor(
    user: string,
    /** What `occ dav:create-calendar` gives a new calendar on the series answered as. */
    calendarComponents: readonly string[] = ['VEVENT', 'VTODO'],
  ) {
    this.#user = user;
    this.#calendarComponents = calendarComponents;
    this.add('addressbook', 'z-server-generated--system', {
      displayName: 'Accounts',
      readOnly: true,
    });
    this.add('addressbook', 'z-app-generated--contactsinteraction--recent', {
      displayName: 'Recently contacted',
      readOnly: true,
    });
    const system = this.find('addressbook', 'z-server-generated--system');
    system?.objects.set(`Database:${user}.vcf`, {
      data: `BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:-//Sabre//Sabre VObject 4.5.4//EN\r\nUID:${user}\r\nFN:${user}\r\nCLOUD:${user}@localhost\r\nEND:VCARD\r\n`,
      etag: newEtag(),
      uid: user,
    });
  }

  add(kind: FakeCollection['kind'], uri: string, opts: CollectionOptions = {}): FakeCollection {
    const collection: FakeCollection = {
      kind,
      uri,
      displayName: opts.displayName ?? uri,
      owner:
        kind === 'calendar'
          ? `principals/users/${opts.sharedBy ?? this.#user}`
          : uri === 'z-server-generated--system'
            ? 'principals/system/system'
            : undefined,
      components: kind === 'calendar' ? (opts.components ?? [...this.#calendarComponents]) : [],
      readOnly: opts.readOnly === true,
      objects: new Map(),
    };
    this.collections.push(collection);
    // Observed: the user's first address book brings the birthday calendar with it.
    if (
      kind === 'addressbook' &&
      !uri.startsWith('z-') &&
      this.find('calendar', 'contact_birthdays') === undefined
    )
      this.add('calendar', 'contact_birthdays', {
        displayName: 'Contact birthdays',
        components: ['VEVENT'],
        readOnly: true,
      });
    return collection;
  }

  /** What a request to `uri` reaches: the user's own collection first, as on the server. */
  find(kind: FakeCollection['kind'], uri: string): FakeCollection | undefined {
    const matching = this.collections.filter((c) => c.kind === kind && c.uri === uri);
    return matching.find((c) => c.owner === `principals/users/${this.#user}`) ?? matching[0];
  }

  remove(kind: FakeCollection['kind'], uri: string): boolean {
    const found = this.find(kind, uri);
    if (found === undefined) return false;
    this.collections.splice(this.collections.indexOf(found), 1);
    return true;
  }
}
