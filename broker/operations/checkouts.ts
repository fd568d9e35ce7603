/**
 * Checkout locks, from the LOCK to the confirmed release (docs/architecture.md,
 * "Checkout locks"). A lock is recorded durably, beside the grants, the moment Nextcloud
 * answers the LOCK; it is released when its checkout ends (checkin, abandon) or must go
 * (a grant it relies on was revoked or expired, its LOCK timed out), and a release that
 * fails is tried again with back-off until Nextcloud confirms the token no longer holds
 * the file. Every attempt is an audited system call (tool `release_lock`). Because the
 * record is durable, a lock whose grant ended while the broker was down is released on
 * start, by the same pass.
 */
import type { CheckoutLockEnd, CheckoutLockRecord, Clock } from '../base/domain.js';
import { refused } from '../base/envelope.js';
import { errorDetail, errorMessage } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { GrantEndedError } from './in-flight.js';
import { OperationRefusal, type Allowed, type Pipeline } from './pipeline.js';
import type { Inspection } from '../nextcloud/client.js';
import type { CheckoutLocksPort, NextcloudPort } from './ports.js';
import { unlockWithEtag } from './unlock.js';

/** The first retry of a failed release, and the longest wait between two. */
export const RELEASE_RETRY_FIRST_MS = 5_000;
export const RELEASE_RETRY_MAX_MS = 30_000;
/** Once the LOCK has timed out on Nextcloud by itself, confirming it is no longer urgent. */
export const RELEASE_RETRY_LAPSED_MS = 10 * 60_000;

/** How long to wait after the `attempts`-th failed release of a lock that runs out at `lockExpiresAt`. */
export function releaseRetryDelay(attempts: number, now: number, lockExpiresAt: number): number {
  if (now >= lockExpiresAt) return RELEASE_RETRY_LAPSED_MS;
  return Math.min(RELEASE_RETRY_MAX_MS, RELEASE_RETRY_FIRST_MS * 2 ** Math.max(0, attempts - 1));
}

/** Checkout's answer when Nextcloud answered the LOCK but holds no lock for its token. */
function lockNotTaken(path: string, lock: Inspection['lock']): OperationRefusal {
  const by =
    lock === null
      ? `Nextcloud answered the LOCK of "${path}" but holds no lock on it`
      : lock.kind === 'user'
        ? `"${path}" is locked by its owner (from the Nextcloud web UI, a desktop client or the OCS lock API), so Nextcloud did not lock it for the broker`
        : lock.kind === 'app'
          ? `"${path}" is locked by an app (an office editor, for example), so Nextcloud did not lock it for the broker`
          : `"${path}" is locked by another client`;
  return new OperationRefusal(
    refused('locked', `${by}: nothing was checked out`, {
      hint:
        lock === null
          ? 'try again; if it happens again, ask the owner to check the files_lock app'
          : 'ask the owner to unlock the file, then check it out again',
    }),
  );
}

export interface CheckoutsDeps {
  readonly pipeline: Pipeline;
  readonly locks: CheckoutLocksPort;
  /** The configured instances: a lock on any other cannot be released by this broker. */
  readonly instances: { has(name: string): boolean };
  readonly logger: Logger;
  readonly now: Clock;
  readonly correlationId: () => string;
}

export class Checkouts {
  readonly #deps: CheckoutsDeps;
  /** One release pass at a time, so two never race on one lock. */
  #running: Promise<void> = Promise.resolve();

  constructor(deps: CheckoutsDeps) {
    this.#deps = deps;
  }

  /**
   * Takes the checkout lock on `allowed`'s path for `seconds`: LOCK, record it, confirm
   * it holds. Answers the token, the file as it is under the lock, and the record.
   */
  async take(
    client: Pick<NextcloudPort, 'lock' | 'inspect' | 'releaseLock'>,
    allowed: Allowed,
    seconds: number,
  ): Promise<{ token: string; entry: Inspection['entry']; record: CheckoutLockRecord }> {
    const path = allowed.paths[0] ?? '';
    const { token } = await client.lock(path, seconds, allowed.signal);
    // Security: recorded durably before anything else can fail, so that no lock is held
    // that the broker would not release (even after a restart).
    let record: CheckoutLockRecord;
    try {
      record = this.#record({
        instance: allowed.instance,
        path,
        token,
        grantIds: allowed.grantIds,
        seconds,
      });
    } catch (error) {
      // Unrecorded, nobody would release it: give it back now (or it runs out by itself).
      await client.releaseLock(path, token).catch(() => undefined);
      throw error;
    }
    try {
      // Security: a LOCK answered with a token is not yet a lock: on a file its own user
      // has locked, Nextcloud answers 200 with a fresh token and holds nothing. Only the
      // file's lock properties show that this token holds it. Their read is also the
      // version the agent gets (the LOCK gave the file a new etag).
      const facts = await client.inspect(path);
      if (facts.lock?.kind !== 'token' || facts.lock.token !== token) {
        // Nothing to release: the record ends here.
        this.#deps.locks.released(record.id, 'not_taken', false);
        throw lockNotTaken(path, facts.lock);
      }
      // Security: a revoke or expiry that landed while the LOCK or that read was on its
      // way must not leave the lock behind: it is released like any other.
      if (allowed.signal.aborted) throw allowed.signal.reason;
      return { token, entry: facts.entry, record };
    } catch (error) {
      if (!(error instanceof OperationRefusal)) {
        const ended = error instanceof GrantEndedError ? error.end.state : 'checkout_failed';
        await this.#releaseNow(record, ended);
      }
      throw error;
    }
  }

  /** Records a lock Nextcloud just answered (before anything else can fail). */
  #record(lock: {
    instance: string;
    path: string;
    token: string;
    grantIds: readonly number[];
    seconds: number;
  }): CheckoutLockRecord {
    const lockedAt = this.#deps.now();
    return this.#deps.locks.add({
      instance: lock.instance,
      path: lock.path,
      token: lock.token,
      grantIds: lock.grantIds,
      lockedAt,
      lockExpiresAt: lockedAt + lock.seconds * 1000,
    });
  }

  /** The lock recorded for this token, whatever its state. */
  byToken(token: string): CheckoutLockRecord | undefined {
    return this.#deps.locks.byToken(token);
  }

  /**
   * The agent's own release (checkin, abandon) of the lock `token` holds, with the etag
   * it may keep (unlock.ts). A release that fails is left to the background retries and
   * rethrown, so the answer says it failed.
   */
  async releaseOwn(
    client: Pick<NextcloudPort, 'stat' | 'releaseLock'>,
    path: string,
    token: string,
    end: 'checkin' | 'abandon',
  ): Promise<Awaited<ReturnType<typeof unlockWithEtag>>> {
    const known = this.byToken(token);
    try {
      const released = await unlockWithEtag(client, path, token);
      if (known !== undefined) this.#deps.locks.released(known.id, end, false);
      return released;
    } catch (error) {
      if (known !== undefined) this.#deps.locks.markReleasing(known.id, end, errorMessage(error));
      throw error;
    }
  }

  /**
   * The owner's undo of a checkout: its lock is released now (as an abandoned checkout's;
   * retried like any release if Nextcloud does not confirm it). Resolves once the
   * attempt ran; the record then says whether it is released.
   */
  releaseForUndo(lockId: number): Promise<void> {
    this.#deps.locks.markReleasing(lockId, 'abandon');
    return this.releaseDue();
  }

  /** The lock recorded under this number, whatever its state. */
  lock(lockId: number): CheckoutLockRecord | undefined {
    return this.#deps.locks.byId(lockId);
  }

  /** Releases one lock now (its checkout failed after the LOCK); retried if that fails. */
  #releaseNow(lock: CheckoutLockRecord, end: CheckoutLockEnd): Promise<void> {
    this.#deps.locks.markReleasing(lock.id, end);
    return this.releaseDue();
  }

  /**
   * Marks the held locks of these grants for release and runs a release pass; resolves
   * once it ran (a failed release stays due and is retried by later passes).
   */
  releaseForGrants(grantIds: readonly number[], end: 'revoked' | 'expired'): Promise<number> {
    const marked = this.#deps.locks.releaseForGrants(grantIds, end).length;
    return this.releaseDue().then(() => marked);
  }

  /** One release attempt for every lock whose release is due (the sweep, and start). */
  releaseDue(): Promise<void> {
    const pass = this.#running.then(() => this.#pass());
    this.#running = pass.catch(() => undefined);
    return pass;
  }

  async #pass(): Promise<void> {
    for (const lock of this.#deps.locks.due()) {
      try {
        await this.#attempt(lock);
      } catch (error) {
        // A lock's bookkeeping failing must not stop the others from being released.
        this.#deps.logger.error('checkout lock release failed', {
          lock: lock.id,
          error: errorDetail(error),
        });
      }
    }
  }

  async #attempt(lock: CheckoutLockRecord): Promise<void> {
    const { pipeline, locks, logger, now } = this.#deps;
    const end: CheckoutLockEnd = lock.end ?? 'expired';
    const attempt = lock.attempts + 1;
    const retry = (error: string): void => {
      const next = now() + releaseRetryDelay(attempt, now(), lock.lockExpiresAt);
      locks.attemptFailed(lock.id, next, error);
      logger.warn('checkout lock not released yet; the broker tries again', {
        lock: lock.id,
        instance: lock.instance,
        path: lock.path,
        attempt,
        next_attempt_at: new Date(next).toISOString(),
        error,
      });
    };
    if (!this.#deps.instances.has(lock.instance)) {
      retry(`instance '${lock.instance}' is no longer configured`);
      return;
    }
    const outcome = await pipeline.runSystem(
      { surface: 'transfer', tool: 'release_lock', correlationId: this.#deps.correlationId() },
      {
        instance: lock.instance,
        path: lock.path,
        grantIds: lock.grantIds,
        reason: `checkout lock ${end}`,
        fields: { lock: lock.id, attempt },
      },
      (client) => client.releaseLock(lock.path, lock.token),
      (released) => ({ released: released.outcome }),
    );
    if (!outcome.ok) {
      retry(outcome.envelope.message);
      return;
    }
    locks.released(lock.id, end, true);
    logger.info('checkout lock released', {
      lock: lock.id,
      instance: lock.instance,
      path: lock.path,
      attempt,
      released: outcome.value.outcome,
    });
  }
}
