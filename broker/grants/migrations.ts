/**
 * The grant database schema, versioned in code. `PRAGMA user_version` holds the number
 * of migrations applied; each migration runs once, in order, in its own transaction.
 * Append new migrations; never edit one that has shipped.
 *
 * Besides the application's own checks, the schema itself refuses what must never
 * happen, so a bug elsewhere cannot quietly do it:
 * - a request leaves `pending` once and never returns to it; items never change;
 * - a grant leaves `active` once (revoked or expired) and never becomes active again;
 *   its instance, path, mode and expiry never change (grants never renew);
 * - nothing is deleted (the database is part of the record of what was allowed);
 * - the link from the approver's 👍 to the approval it made never changes, and is
 *   marked undone at most once;
 * - a checkout lock moves held → releasing → released, never back, and what it locked,
 *   with which token and under which grants, never changes.
 */
import type { Database } from 'better-sqlite3';

export const MIGRATIONS: readonly string[] = [
  // 1: requests, their items, and the grants made from approved items.
  `
  CREATE TABLE requests (
    -- AUTOINCREMENT: a request number is never reused, even after the newest is gone,
    -- so an approval typed for an old number cannot land on a new request.
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    instance    TEXT    NOT NULL CHECK (length(instance) > 0),
    reason      TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN
                  ('pending', 'approved', 'partially_approved', 'denied', 'expired', 'discarded')),
    created_at  INTEGER NOT NULL,
    decided_at  INTEGER,
    decided_by  TEXT
  ) STRICT;

  CREATE TABLE items (
    request_id  INTEGER NOT NULL REFERENCES requests (id),
    n           INTEGER NOT NULL CHECK (n >= 1),
    path        TEXT    NOT NULL CHECK (length(path) > 0),
    mode        TEXT    NOT NULL CHECK (mode IN ('read', 'write')),
    PRIMARY KEY (request_id, n)
  ) STRICT;

  CREATE TABLE grants (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id  INTEGER NOT NULL,
    item_no     INTEGER NOT NULL,
    instance    TEXT    NOT NULL CHECK (length(instance) > 0),
    path        TEXT    NOT NULL CHECK (length(path) > 0),
    mode        TEXT    NOT NULL CHECK (mode IN ('read', 'write')),
    state       TEXT    NOT NULL CHECK (state IN ('active', 'expired', 'revoked')),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL CHECK (expires_at > created_at),
    ended_at    INTEGER,
    FOREIGN KEY (request_id, item_no) REFERENCES items (request_id, n),
    UNIQUE (request_id, item_no)
  ) STRICT;

  CREATE INDEX requests_by_state ON requests (state);
  CREATE INDEX grants_by_state ON grants (state, expires_at);

  CREATE TRIGGER requests_decided_once BEFORE UPDATE OF state ON requests
    WHEN OLD.state <> 'pending' OR NEW.state = 'pending'
    BEGIN SELECT RAISE(ABORT, 'a request leaves pending once'); END;
  CREATE TRIGGER requests_decision_fixed BEFORE UPDATE OF decided_at, decided_by ON requests
    WHEN OLD.state <> 'pending'
    BEGIN SELECT RAISE(ABORT, 'a decision is never rewritten'); END;
  CREATE TRIGGER requests_fixed BEFORE UPDATE OF id, instance, reason, created_at ON requests
    BEGIN SELECT RAISE(ABORT, 'a request is never rewritten'); END;
  CREATE TRIGGER requests_kept BEFORE DELETE ON requests
    BEGIN SELECT RAISE(ABORT, 'requests are never deleted'); END;
  CREATE TRIGGER items_fixed BEFORE UPDATE ON items
    BEGIN SELECT RAISE(ABORT, 'items are never rewritten'); END;
  CREATE TRIGGER items_kept BEFORE DELETE ON items
    BEGIN SELECT RAISE(ABORT, 'items are never deleted'); END;
  CREATE TRIGGER items_only_while_pending BEFORE INSERT ON items
    WHEN (SELECT state FROM requests WHERE id = NEW.request_id) IS NOT 'pending'
    BEGIN SELECT RAISE(ABORT, 'items are added only to a pending request'); END;
  CREATE TRIGGER grants_end_once BEFORE UPDATE OF state ON grants
    WHEN OLD.state <> 'active' OR NEW.state = 'active'
    BEGIN SELECT RAISE(ABORT, 'a grant ends once and never becomes active again'); END;
  CREATE TRIGGER grants_end_fixed BEFORE UPDATE OF ended_at ON grants
    WHEN OLD.state <> 'active'
    BEGIN SELECT RAISE(ABORT, 'the end of a grant is never rewritten'); END;
  CREATE TRIGGER grants_fixed BEFORE UPDATE OF
      id, request_id, item_no, instance, path, mode, created_at, expires_at ON grants
    BEGIN SELECT RAISE(ABORT, 'grants never change or renew'); END;
  CREATE TRIGGER grants_kept BEFORE DELETE ON grants
    BEGIN SELECT RAISE(ABORT, 'grants are never deleted'); END;
  CREATE TRIGGER grants_from_decided_request BEFORE INSERT ON grants
    WHEN (SELECT state FROM requests WHERE id = NEW.request_id)
         NOT IN ('approved', 'partially_approved')
      OR (SELECT instance FROM requests WHERE id = NEW.request_id) IS NOT NEW.instance
      OR (SELECT path FROM items WHERE request_id = NEW.request_id AND n = NEW.item_no)
         IS NOT NEW.path
      OR (SELECT mode FROM items WHERE request_id = NEW.request_id AND n = NEW.item_no)
         IS NOT NEW.mode
    BEGIN SELECT RAISE(ABORT, 'a grant is made only from an approved item, as requested'); END;
  `,
  // 2: which chat reaction (the approver's 👍) made which approval, so that withdrawing
  // it revokes what it granted even after a restart (docs/architecture.md). `undone_at` is set
  // once, when the withdrawal was acted on: one reaction undoes at most once.
  `
  CREATE TABLE approval_reactions (
    event_id    TEXT    PRIMARY KEY CHECK (length(event_id) > 0),
    request_id  INTEGER NOT NULL REFERENCES requests (id),
    room_id     TEXT    NOT NULL CHECK (length(room_id) > 0),
    approver    TEXT    NOT NULL CHECK (length(approver) > 0),
    created_at  INTEGER NOT NULL,
    undone_at   INTEGER
  ) STRICT;

  CREATE TRIGGER approval_reactions_fixed BEFORE UPDATE OF
      event_id, request_id, room_id, approver, created_at ON approval_reactions
    BEGIN SELECT RAISE(ABORT, 'an approval reaction is never rewritten'); END;
  CREATE TRIGGER approval_reactions_undone_once BEFORE UPDATE OF undone_at ON approval_reactions
    WHEN OLD.undone_at IS NOT NULL OR NEW.undone_at IS NULL
    BEGIN SELECT RAISE(ABORT, 'an approval reaction is undone once'); END;
  CREATE TRIGGER approval_reactions_kept BEFORE DELETE ON approval_reactions
    BEGIN SELECT RAISE(ABORT, 'approval reactions are never deleted'); END;
  CREATE TRIGGER approval_reactions_from_approval BEFORE INSERT ON approval_reactions
    WHEN COALESCE((SELECT state FROM requests WHERE id = NEW.request_id), '')
         NOT IN ('approved', 'partially_approved')
      OR NEW.undone_at IS NOT NULL
    BEGIN SELECT RAISE(ABORT, 'a reaction is linked only to an approved request'); END;
  `,
  // 3: this database's identity: 16 random bytes (hex), made once when the migration
  // runs, so a new database (the file deleted or replaced) has a different one. Request
  // numbers restart at 1 in a new database; chat messages carry the store id next to
  // the request number, so a 👍 on a message about an old database's request 3 is not
  // taken for the new request 3. It needs only to differ between databases, so
  // SQLite's randomblob() is enough. One row, never changed, never deleted.
  `
  CREATE TABLE store_meta (
    only_row    INTEGER PRIMARY KEY CHECK (only_row = 1),
    store_id    TEXT    NOT NULL CHECK (length(store_id) = 32 AND store_id NOT GLOB '*[^0-9a-f]*')
  ) STRICT;

  INSERT INTO store_meta (only_row, store_id) VALUES (1, lower(hex(randomblob(16))));

  CREATE TRIGGER store_meta_fixed BEFORE UPDATE ON store_meta
    BEGIN SELECT RAISE(ABORT, 'the store id is never rewritten'); END;
  CREATE TRIGGER store_meta_kept BEFORE DELETE ON store_meta
    BEGIN SELECT RAISE(ABORT, 'the store id is never deleted'); END;
  `,
  // 4: the checkout locks the broker holds on Nextcloud, so that a lock whose grant ends
  // is released after a restart too, and a release that failed is tried again until
  // Nextcloud confirms it (docs/architecture.md, "Checkout locks"). The token is kept
  // because an UNLOCK needs it; it is looked up by its sha256. A row stays after its
  // release, as the record of what was locked, under which grants, and when it went.
  `
  CREATE TABLE checkout_locks (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    instance         TEXT    NOT NULL CHECK (length(instance) > 0),
    path             TEXT    NOT NULL CHECK (length(path) > 0),
    token            TEXT    NOT NULL CHECK (length(token) > 0),
    token_sha256     TEXT    NOT NULL UNIQUE
                       CHECK (length(token_sha256) = 64 AND token_sha256 NOT GLOB '*[^0-9a-f]*'),
    locked_at        INTEGER NOT NULL,
    lock_expires_at  INTEGER NOT NULL CHECK (lock_expires_at > locked_at),
    state            TEXT    NOT NULL CHECK (state IN ('held', 'releasing', 'released')),
    end_reason       TEXT    CHECK (end_reason IN
                       ('checkin', 'abandon', 'revoked', 'expired', 'timed_out', 'not_taken',
                        'checkout_failed')),
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  INTEGER,
    last_error       TEXT,
    released_at      INTEGER,
    CHECK ((state = 'held') = (end_reason IS NULL)),
    CHECK ((state = 'released') = (released_at IS NOT NULL))
  ) STRICT;

  CREATE TABLE checkout_lock_grants (
    lock_id   INTEGER NOT NULL REFERENCES checkout_locks (id),
    grant_id  INTEGER NOT NULL REFERENCES grants (id),
    PRIMARY KEY (lock_id, grant_id)
  ) STRICT;

  CREATE INDEX checkout_locks_open ON checkout_locks (state) WHERE state <> 'released';
  CREATE INDEX checkout_lock_grants_by_grant ON checkout_lock_grants (grant_id);

  CREATE TRIGGER checkout_locks_taken_held BEFORE INSERT ON checkout_locks
    WHEN NEW.state <> 'held' OR NEW.attempts <> 0 OR NEW.next_attempt_at IS NOT NULL
    BEGIN SELECT RAISE(ABORT, 'a checkout lock starts held'); END;
  CREATE TRIGGER checkout_locks_forward BEFORE UPDATE OF state ON checkout_locks
    WHEN OLD.state = 'released' OR (NEW.state = 'held' AND OLD.state <> 'held')
    BEGIN SELECT RAISE(ABORT, 'a checkout lock moves held, releasing, released, never back'); END;
  CREATE TRIGGER checkout_locks_released_fixed BEFORE UPDATE ON checkout_locks
    WHEN OLD.state = 'released'
    BEGIN SELECT RAISE(ABORT, 'a released checkout lock never changes'); END;
  CREATE TRIGGER checkout_locks_fixed BEFORE UPDATE OF
      id, instance, path, token, token_sha256, locked_at, lock_expires_at ON checkout_locks
    BEGIN SELECT RAISE(ABORT, 'what a checkout locked is never rewritten'); END;
  CREATE TRIGGER checkout_locks_end_fixed BEFORE UPDATE OF end_reason ON checkout_locks
    WHEN OLD.end_reason IS NOT NULL AND NEW.end_reason IS NOT OLD.end_reason
    BEGIN SELECT RAISE(ABORT, 'why a checkout lock ended is never rewritten'); END;
  CREATE TRIGGER checkout_locks_kept BEFORE DELETE ON checkout_locks
    BEGIN SELECT RAISE(ABORT, 'checkout locks are never deleted'); END;
  CREATE TRIGGER checkout_lock_grants_fixed BEFORE UPDATE ON checkout_lock_grants
    BEGIN SELECT RAISE(ABORT, 'the grants of a checkout lock are never rewritten'); END;
  CREATE TRIGGER checkout_lock_grants_kept BEFORE DELETE ON checkout_lock_grants
    BEGIN SELECT RAISE(ABORT, 'the grants of a checkout lock are never deleted'); END;
  -- A lock is recorded even when its grant ended while the LOCK was on its way: the
  -- record is what gets it released.
  CREATE TRIGGER checkout_lock_grants_when_taken BEFORE INSERT ON checkout_lock_grants
    WHEN (SELECT state FROM checkout_locks WHERE id = NEW.lock_id) IS NOT 'held'
    BEGIN SELECT RAISE(ABORT, 'the grants of a checkout lock are recorded as it is taken'); END;
  `,
  // 5: kinds of grants (docs/contracts.md, "Resources beyond files"): every item and
  // grant is on files (all that existed before, marked so by the column's default), one
  // calendar, or one address book. A collection is named by one component; an address
  // book is granted read only. The grant copies its item's kind, and never changes it.
  `
  ALTER TABLE items ADD COLUMN kind TEXT NOT NULL DEFAULT 'files'
    CHECK (kind IN ('files', 'calendar', 'contacts'));
  ALTER TABLE grants ADD COLUMN kind TEXT NOT NULL DEFAULT 'files'
    CHECK (kind IN ('files', 'calendar', 'contacts'));

  CREATE TRIGGER items_collection_shape BEFORE INSERT ON items
    WHEN NEW.kind <> 'files' AND (instr(NEW.path, '/') > 0
      OR (NEW.kind = 'contacts' AND NEW.mode <> 'read'))
    BEGIN SELECT RAISE(ABORT, 'a collection item names one component; contacts are read only'); END;
  CREATE TRIGGER grants_kind_fixed BEFORE UPDATE OF kind ON grants
    BEGIN SELECT RAISE(ABORT, 'grants never change or renew'); END;
  CREATE TRIGGER grants_kind_as_requested BEFORE INSERT ON grants
    WHEN (SELECT kind FROM items WHERE request_id = NEW.request_id AND n = NEW.item_no)
         IS NOT NEW.kind
    BEGIN SELECT RAISE(ABORT, 'a grant is made only from an approved item, as requested'); END;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/** Brings the database to SCHEMA_VERSION; refuses one written by a newer broker. */
export function migrate(db: Database): void {
  const current = db.pragma('user_version', { simple: true });
  if (typeof current !== 'number' || !Number.isInteger(current) || current < 0) {
    throw new Error('the grant database has an unreadable schema version');
  }
  if (current > SCHEMA_VERSION) {
    throw new Error(
      `the grant database has schema version ${current}, newer than this broker's ${SCHEMA_VERSION}: upgrade the broker`,
    );
  }
  for (let version = current + 1; version <= SCHEMA_VERSION; version++) {
    const sql = MIGRATIONS[version - 1] as string;
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${version}`);
    }).immediate();
  }
}
