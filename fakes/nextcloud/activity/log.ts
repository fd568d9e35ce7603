/**
 * The Activity app's table: one row per change and per user it affects, as Nextcloud
 * 34.0.1 and 29.0.5 write them (docs/nextcloud-behaviour.md "The Activity app"). Ids are
 * global across users. The fake's user's own changes are "You …" rows in their stream;
 * a change inside a share they received also writes a "{user} …" row into the sharer's
 * stream (the sharer's path: the share's folder at the sharer's root, as the tests make
 * them). Reads, version restores and locks write nothing.
 */

/** A rich-object parameter as the providers build it (`link` is added when answered). */
export interface RichParam {
  readonly type: string;
  readonly id: string | number;
  readonly name: string;
  /** Files: the path in the affected user's view, without a leading slash. */
  readonly path?: string;
}

export interface ActivityRow {
  readonly id: number;
  /** Whose stream it is in. */
  readonly affected: string;
  /** Who made the change (`user` in the answer). */
  readonly author: string;
  readonly app: 'files' | 'dav';
  readonly type: string;
  /** The provider's subject key: `created_self`, `moved_by`, `object_add_event`, … */
  readonly subject: string;
  /** The rich subject, `{name}` placeholders for `params`. */
  readonly template: string;
  readonly params: Readonly<Record<string, RichParam>>;
  /** Which parameter merges with the same subject's neighbours (then `user`, see merge.ts). */
  readonly mergeBy: readonly string[];
  readonly objectType: string;
  readonly objectId: number;
  /** The path in the affected user's view, with a leading slash ('' for groupware). */
  readonly objectName: string;
  /** Unix seconds. */
  readonly timestamp: number;
  /** Files: the folder the link opens (`/apps/files/?dir=…`); '' for none. */
  readonly linkDir: string | undefined;
}

export type FileChange = 'created' | 'changed' | 'deleted' | 'restored';

const FILE_TYPES: Record<FileChange, string> = {
  created: 'file_created',
  changed: 'file_changed',
  deleted: 'file_deleted',
  restored: 'file_restored',
};

/** A file or folder as a row names it: its id and its path in one user's view ('/a/b'). */
export interface FileRef {
  readonly fileId: number;
  readonly path: string;
}

/** The stream a change also reaches: the sharer's, with the path in the sharer's view. */
export interface SharerView {
  readonly user: string;
  readonly path: (ownPath: string) => string;
}

/** Display names as the kit's users have them: the user id with a capital first letter. */
export function displayName(user: string): string {
  return user.charAt(0).toUpperCase() + user.slice(1);
}

function dirOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

function nameOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function fileParam(file: FileRef): RichParam {
  return {
    type: 'file',
    id: String(file.fileId),
    name: nameOf(file.path),
    path: file.path.replace(/^\/+/, ''),
  };
}

function userParam(user: string): RichParam {
  return { type: 'user', id: user, name: displayName(user) };
}

/** A calendar or address book as activities name it. */
export interface CollectionRef {
  /** The collection's number (object_id). */
  readonly id: number;
  readonly name: string;
}

export type GroupwareChange = 'created' | 'updated' | 'deleted' | 'restored';

const EVENT_TEMPLATES: Record<GroupwareChange, [subject: string, rich: string]> = {
  created: ['object_add_event', 'created event {event} in calendar {calendar}'],
  updated: ['object_update_event', 'updated event {event} in calendar {calendar}'],
  deleted: ['object_delete_event', 'deleted event {event} from calendar {calendar}'],
  restored: ['object_restore_event', 'restored event {event} of calendar {calendar}'],
};

const CARD_TEMPLATES: Record<Exclude<GroupwareChange, 'restored'>, [string, string]> = {
  created: ['card_add', 'created contact {card} in address book {addressbook}'],
  updated: ['card_update', 'updated contact {card} in address book {addressbook}'],
  deleted: ['card_delete', 'deleted contact {card} from address book {addressbook}'],
};

export class ActivityLog {
  readonly #rows: ActivityRow[] = [];
  #nextId = 1;

  constructor(
    /** 29 writes a collection's number in `subject_rich` as a number, 34 as a string. */
    readonly collectionIdAsString: boolean,
    readonly now: () => number,
  ) {}

  /** Every row of one user's stream, in id order. */
  streamOf(user: string): ActivityRow[] {
    return this.#rows.filter((row) => row.affected === user);
  }

  /** The row with this id, whoever's stream it is in. */
  row(id: number): ActivityRow | undefined {
    return this.#rows.find((row) => row.id === id);
  }

  #add(row: Omit<ActivityRow, 'id' | 'timestamp'>): void {
    this.#rows.push({ ...row, id: this.#nextId++, timestamp: Math.floor(this.now() / 1000) });
  }

  /** The streams a change by `author` reaches: the author's own, and a sharer's. */
  #streams(author: string, affected: string, sharer: SharerView | undefined) {
    const streams = [{ user: affected, view: (p: string) => p }];
    if (sharer !== undefined && sharer.user !== affected)
      streams.push({ user: sharer.user, view: sharer.path });
    return streams.map((s) => ({ ...s, own: s.user === author }));
  }

  /** A file created, changed, deleted or restored by `author`, seen by `affected`. */
  file(
    change: FileChange,
    author: string,
    affected: string,
    file: FileRef,
    sharer?: SharerView,
  ): void {
    for (const stream of this.#streams(author, affected, sharer)) {
      const seen = { fileId: file.fileId, path: stream.view(file.path) };
      this.#add({
        affected: stream.user,
        author,
        app: 'files',
        type: FILE_TYPES[change],
        subject: `${change}_${stream.own ? 'self' : 'by'}`,
        template: `${stream.own ? 'You' : '{user}'} ${change} {file}`,
        params: {
          file: fileParam(seen),
          ...(stream.own ? {} : { user: userParam(author) }),
        },
        mergeBy: ['file'],
        objectType: 'files',
        objectId: file.fileId,
        objectName: seen.path,
        linkDir: dirOf(seen.path),
      });
    }
  }

  /**
   * A file or folder moved: "renamed" within its folder, else "moved", whose `newfile` is
   * the target folder (the file itself when its name changed too). The activity app
   * writes the new path as the folder's path, a slash and the name, so a file that ends
   * up at the root is `//name` (observed on both series).
   */
  moved(
    author: string,
    affected: string,
    from: FileRef,
    to: FileRef,
    targetFolder: FileRef,
    sharer?: SharerView,
  ): void {
    const renamed = dirOf(from.path) === dirOf(to.path);
    const verb = renamed ? 'renamed' : 'moved';
    const sameName = nameOf(from.path) === nameOf(to.path);
    for (const stream of this.#streams(author, affected, sharer)) {
      const newPath = stream.view(to.path);
      const folder = dirOf(newPath);
      const newfile =
        !renamed && sameName
          ? { fileId: targetFolder.fileId, path: stream.view(targetFolder.path) }
          : { fileId: to.fileId, path: newPath };
      this.#add({
        affected: stream.user,
        author,
        app: 'files',
        type: 'file_changed',
        subject: `${verb}_${stream.own ? 'self' : 'by'}`,
        template: `${stream.own ? 'You' : '{user}'} ${verb} {oldfile} to {newfile}`,
        params: {
          newfile: fileParam(newfile),
          oldfile: fileParam({ fileId: from.fileId, path: stream.view(from.path) }),
          ...(stream.own ? {} : { user: userParam(author) }),
        },
        mergeBy: renamed ? ['file'] : ['oldfile'],
        objectType: 'files',
        objectId: to.fileId,
        objectName: `${folder === '/' ? '/' : folder}/${nameOf(newPath)}`,
        linkDir: folder,
      });
    }
  }

  /** An event created, updated, deleted or restored by the user in their own calendar. */
  event(
    change: GroupwareChange,
    user: string,
    calendar: CollectionRef,
    event: { uid: string; summary: string },
  ): void {
    const [subject, rich] = EVENT_TEMPLATES[change];
    this.#groupware(user, 'calendar_event', subject, rich, 'event', calendar, 'calendar', {
      type: 'calendar-event',
      id: event.uid,
      name: event.summary,
    });
  }

  /** A card created, updated or deleted by the user in their own address book. */
  card(
    change: Exclude<GroupwareChange, 'restored'>,
    user: string,
    book: CollectionRef,
    card: { uid: string; name: string },
  ): void {
    const [subject, rich] = CARD_TEMPLATES[change];
    this.#groupware(user, 'contacts', subject, rich, 'card', book, 'addressbook', {
      type: 'addressbook-contact',
      id: card.uid,
      name: card.name,
    });
  }

  #groupware(
    user: string,
    type: string,
    subject: string,
    rich: string,
    item: 'event' | 'card',
    collection: CollectionRef,
    kind: 'calendar' | 'addressbook',
    param: RichParam,
  ): void {
    this.#add({
      affected: user,
      author: user,
      app: 'dav',
      type,
      subject: `${subject}_self`,
      template: `You ${rich}`,
      params: {
        [kind]: {
          type: kind,
          id: this.collectionIdAsString ? String(collection.id) : collection.id,
          name: collection.name,
        },
        [item]: param,
      },
      mergeBy: [item],
      objectType: kind,
      objectId: collection.id,
      objectName: '',
      linkDir: undefined,
    });
  }
}
