/**
 * The fake homeserver's end-to-end encryption state (Client-Server API "End-to-end
 * encryption" and "Send-to-Device messaging"): sessions (device + access token), device
 * keys, one-time and fallback keys, cross-signing keys and their signatures, to-device
 * queues, and the stream of device-list changes `/sync` reports. The server never sees a
 * private key or a plaintext: it stores and relays what clients sign and encrypt.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';

export type Json = Record<string, unknown>;

export interface Session {
  readonly userId: string;
  readonly deviceId: string;
  readonly token: string;
  displayName: string | undefined;
  keys: Json | undefined;
  readonly oneTimeKeys: Map<string, Json>;
  /** Fallback keys by key id (`alg:id`), with whether one was handed out. */
  readonly fallbackKeys: Map<string, { key: Json; used: boolean }>;
}

export interface ToDevice {
  readonly seq: number;
  readonly userId: string;
  readonly deviceId: string;
  readonly event: { sender: string; type: string; content: Json };
}

export type CrossSigningUse = 'master' | 'self_signing' | 'user_signing';

export class E2eeState {
  /** Position in the E2EE stream (to-device messages and device-list changes). */
  #seq = 0;
  readonly #sessions = new Map<string, Session>();
  readonly #byToken = new Map<string, Session>();
  readonly #crossSigning = new Map<string, Partial<Record<CrossSigningUse, Json>>>();
  readonly #queue: ToDevice[] = [];
  readonly #changes: { seq: number; userId: string }[] = [];
  readonly uiaSessions = new Set<string>();
  readonly txns = new Set<string>();

  readonly #notify: () => void;

  constructor(notify: () => void) {
    this.#notify = notify;
  }

  head(): number {
    return this.#seq;
  }

  #tick(): number {
    this.#seq += 1;
    return this.#seq;
  }

  createSession(
    userId: string,
    opts: { deviceId?: string | undefined; token?: string | undefined; displayName?: string },
  ): Session {
    const deviceId = opts.deviceId ?? randomBytes(5).toString('hex').toUpperCase();
    const old = this.#sessions.get(key(userId, deviceId));
    if (old !== undefined) this.#byToken.delete(old.token);
    const session: Session = {
      userId,
      deviceId,
      token: opts.token ?? `syt_${randomBytes(18).toString('base64url')}`,
      displayName: opts.displayName,
      keys: old?.keys,
      oneTimeKeys: old?.oneTimeKeys ?? new Map(),
      fallbackKeys: old?.fallbackKeys ?? new Map(),
    };
    this.#sessions.set(key(userId, deviceId), session);
    this.#byToken.set(session.token, session);
    return session;
  }

  sessionOfToken(token: string): Session | undefined {
    return this.#byToken.get(token);
  }

  session(userId: string, deviceId: string): Session | undefined {
    return this.#sessions.get(key(userId, deviceId));
  }

  devicesOf(userId: string): Session[] {
    return [...this.#sessions.values()].filter((s) => s.userId === userId);
  }

  /** Logs the device out: its token, keys and queued messages are gone. */
  deleteSession(userId: string, deviceId: string): boolean {
    const s = this.#sessions.get(key(userId, deviceId));
    if (s === undefined) return false;
    this.#sessions.delete(key(userId, deviceId));
    this.#byToken.delete(s.token);
    this.changed(userId);
    return true;
  }

  /** A user's device list or cross-signing keys changed: reported in `device_lists`. */
  changed(userId: string): void {
    this.#changes.push({ seq: this.#tick(), userId });
    this.#notify();
  }

  /** Users whose keys changed after `since`, up to now. */
  changedSince(since: number): Set<string> {
    return new Set(this.#changes.filter((c) => c.seq > since).map((c) => c.userId));
  }

  /** Stores a device's keys; reports a change when they differ from the stored ones. */
  setDeviceKeys(s: Session, keys: Json): void {
    if (isDeepStrictEqual(s.keys, keys)) return;
    s.keys = keys;
    this.changed(s.userId);
  }

  crossSigningOf(userId: string): Partial<Record<CrossSigningUse, Json>> {
    return this.#crossSigning.get(userId) ?? {};
  }

  setCrossSigning(userId: string, keys: Partial<Record<CrossSigningUse, Json>>): void {
    this.#crossSigning.set(userId, { ...this.crossSigningOf(userId), ...keys });
    this.changed(userId);
  }

  enqueue(target: { userId: string; deviceId: string }, event: ToDevice['event']): void {
    this.#queue.push({ seq: this.#tick(), ...target, event });
  }

  /** Wakes long-polls after a batch of `enqueue`. */
  flush(): void {
    this.#notify();
  }

  /** Messages for a device after `since`; those up to `since` were received: dropped. */
  toDeviceFor(userId: string, deviceId: string, since: number): ToDevice[] {
    for (let i = this.#queue.length - 1; i >= 0; i -= 1) {
      const m = this.#queue[i];
      if (m && m.userId === userId && m.deviceId === deviceId && m.seq <= since) {
        this.#queue.splice(i, 1);
      }
    }
    return this.#queue.filter((m) => m.userId === userId && m.deviceId === deviceId);
  }
}

function key(userId: string, deviceId: string): string {
  return `${userId}\u0000${deviceId}`;
}
