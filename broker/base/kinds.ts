/**
 * The kinds of resource a grant can be on (docs/contracts.md, "Resources beyond files"),
 * in one table: each kind's name, the modes it can be granted, what its paths look like,
 * and what it refuses. The wall, the grant store, the request checks, the tools' schemas
 * and the approval messages read it here (through `kindRules`), and say nothing of a
 * kind themselves. A new kind is a row here, its Nextcloud client and its tools, and one
 * migration that widens the grant database's own check (docs/architecture.md, "Adding a
 * kind"); test/base/new-kind.test.ts wires an empty one through.
 *
 * Pure data and pure functions, importing nothing.
 */

export const MODES = ['read', 'write'] as const;

/** What a grant allows. `write` implies `read` within the same scope. */
export type Mode = (typeof MODES)[number];

/** A kind whose grants cover a path and everything below it (files). */
interface TreeKind {
  readonly paths: 'tree';
  readonly modes: readonly Mode[];
  /** What one item of it is, for the agent. */
  readonly item: string;
  /** What a write item allows, said to the owner in the request message. */
  readonly writeMeans?: string;
}

/**
 * A kind whose grants cover exactly one collection, named by one path component: its URI
 * name on Nextcloud (never another whose name it is a prefix of, never a display name).
 */
interface CollectionKindRow {
  readonly paths: 'one';
  readonly modes: readonly Mode[];
  /** How a message names one: `calendar "personal"`. */
  readonly one: string;
  /** The argument its tools name one by (a refused name says which argument). */
  readonly argument: string;
  /** What its modes mean, for the agent. */
  readonly access: string;
  /** Why a mode it is not granted in is refused: one sentence every reader says. */
  readonly refuses?: string;
  /** What a write item allows, said to the owner in the request message. */
  readonly writeMeans?: string;
  /** Names Nextcloud gives some of them, with what they hold (shown to the owner). */
  readonly known?: Readonly<Record<string, string>>;
}

export type KindRow = TreeKind | CollectionKindRow;

export const KINDS = {
  files: {
    paths: 'tree',
    modes: ['read', 'write'],
    item: 'a file or folder path',
    writeMeans:
      'Write on a folder lets the agent create, overwrite, move and trash anything inside it.',
  },
  calendar: {
    paths: 'one',
    modes: ['read', 'write'],
    one: 'calendar',
    argument: 'calendar',
    access: 'read, or write = create events',
    writeMeans: 'Write on a calendar lets the agent add events to it, never change or delete one.',
  },
  contacts: {
    paths: 'one',
    modes: ['read'],
    one: 'address book',
    argument: 'addressbook',
    access: 'read only',
    refuses: 'contacts can only be read: address books are read only through the broker',
    known: {
      'z-server-generated--system': "the server's directory of every account",
      'z-app-generated--contactsinteraction--recent': 'everyone recently contacted',
    },
  },
} as const satisfies Readonly<Record<string, KindRow>>;

/** The kind of an item that names none (docs/contracts.md: files). */
export const DEFAULT_KIND = 'files' satisfies keyof typeof KINDS;

/**
 * What a grant is on: files (a path and everything below it), or exactly one collection
 * of another kind (its URI name, one path component).
 */
export type Kind = keyof typeof KINDS;

/** The kinds beyond files: each names one collection by one component. */
export type CollectionKind = {
  [K in Kind]: (typeof KINDS)[K] extends { paths: 'one' } ? K : never;
}[Kind];

/** `a`, `a or b`, `a, b or c`. */
function either(words: readonly string[]): string {
  return words.length < 2
    ? (words[0] ?? '')
    : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1] ?? ''}`;
}

/**
 * Everything the readers take from a table of kinds. Production reads it from KINDS (the
 * exports below); a test derives it from a table with one more kind.
 */
export function kindRules<K extends string, C extends K>(table: Readonly<Record<K, KindRow>>) {
  const names = Object.keys(table) as K[];
  const isKind = (value: unknown): value is K =>
    typeof value === 'string' && Object.hasOwn(table, value);
  const row = (kind: K): KindRow => table[kind];
  const collectionKinds = names.filter((k) => row(k).paths === 'one') as C[];
  const isCollectionKind = (value: unknown): value is C =>
    isKind(value) && row(value).paths === 'one';
  const collection = (kind: C): CollectionKindRow => table[kind] as CollectionKindRow;
  return {
    KIND_NAMES: names as readonly K[],
    /** The kinds beyond files, in the table's order. */
    COLLECTION_KINDS: collectionKinds as readonly C[],
    isKind,
    isCollectionKind,
    /** Whether `kind` can be granted `mode`. */
    kindGrants: (kind: K, mode: Mode): boolean => row(kind).modes.includes(mode),
    /** What a write item of `kind` allows, for the owner (undefined: nothing to add). */
    kindWriteMeans: (kind: K): string | undefined => row(kind).writeMeans,
    /** The modes `kind` can be granted, as the agent writes them: `"read"`. */
    kindModes: (kind: K): string => either(row(kind).modes.map((m) => `"${m}"`)),
    /** Why `kind` is not granted `mode`: the row's own sentence. */
    modeRefusal: (kind: K, mode: Mode): string => {
      const r = row(kind);
      return (r.paths === 'one' ? r.refuses : undefined) ?? `${kind} cannot be granted ${mode}`;
    },
    /** How a message names one collection: `calendar`, `address book`. */
    collectionWord: (kind: C): string => collection(kind).one,
    /** The argument a collection kind's tools name one by. */
    collectionArgument: (kind: C): string => collection(kind).argument,
    /** What a collection kind's modes mean, for the agent. */
    collectionAccess: (kind: C): string => collection(kind).access,
    /** What Nextcloud's own collection of that name holds, if it is one of its own. */
    knownCollection: (kind: C, name: string): string | undefined => {
      const known = collection(kind).known;
      return known !== undefined && Object.hasOwn(known, name) ? known[name] : undefined;
    },
    /** `calendar or address book`: one of the collections, in words. */
    COLLECTION_WORDS: either(collectionKinds.map((k) => collection(k).one)),
    /** `"calendar" or "contacts"`: the collection kinds as the agent names them. */
    COLLECTION_NAMES: either(collectionKinds.map((k) => `"${k}"`)),
    /** What an item of the tree kind is (`a file or folder path`). */
    treeItem: (kind: K): string | undefined => {
      const r = row(kind);
      return r.paths === 'tree' ? r.item : undefined;
    },
  };
}

export const {
  KIND_NAMES,
  COLLECTION_KINDS,
  isKind,
  isCollectionKind,
  kindGrants,
  kindModes,
  kindWriteMeans,
  modeRefusal,
  collectionWord,
  collectionArgument,
  collectionAccess,
  knownCollection,
  COLLECTION_WORDS,
  COLLECTION_NAMES,
  treeItem,
} = kindRules<Kind, CollectionKind>(KINDS);
