/**
 * The `admin_audit` app's log (JSON lines), as Nextcloud 34.0.1 and 29.0.5 write it with
 * `log.condition` set (docs/nextcloud-behaviour.md "admin_audit"): every authenticated
 * request writes two `Login attempt` lines (user `--`) and one `Login successful` under
 * its request id, and each file action one line more (34 names the file id and the path
 * as `/<user>/files/…`; 29 the path alone, two slashes for a new file at the root).
 * Calendar, address book and OCS requests write the login lines only.
 *
 * The fake keeps the lines in memory; `fake.adminAudit()` answers them as the file's text.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** The request a handler is answering (set by the server for each request). */
export interface CurrentRequest {
  readonly id: string;
  readonly method: string;
  readonly url: string;
  readonly userAgent: string;
}

const CURRENT = new AsyncLocalStorage<CurrentRequest>();

export function inRequest<T>(request: CurrentRequest, run: () => Promise<T>): Promise<T> {
  return CURRENT.run(request, run);
}

export type FileAction =
  | { kind: 'accessed' | 'deleted'; fileId: number; path: string }
  | { kind: 'created' | 'written'; fileId: number; path: string; isNew: boolean }
  | { kind: 'renamed'; fileId: number; from: string; to: string };

export class AdminAuditLog {
  readonly #lines: string[] = [];

  constructor(
    /** 34 or 29: the words of the file lines. */
    readonly series: 34 | 29,
    readonly version: string,
    readonly now: () => number,
  ) {}

  /** The log as the file holds it. */
  text(): string {
    return this.#lines.map((l) => `${l}\n`).join('');
  }

  /** A request of `user` passed authentication. */
  loggedIn(user: string): void {
    this.#write('--', `Login attempt: "${user}"`);
    this.#write('--', `Login attempt: "${user}"`);
    this.#write(user, `Login successful: "${user}"`);
  }

  /** A file action of `user` in the current request (none outside a request). */
  file(user: string, action: FileAction): void {
    for (const message of this.#messages(user, action)) this.#write(user, message);
  }

  #messages(user: string, a: FileAction): string[] {
    const full = (p: string): string => `/${user}/files/${p}`;
    if (this.series === 34) {
      const id = `File with id "${a.fileId}"`;
      switch (a.kind) {
        case 'accessed':
          return [`${id} accessed: "${full(a.path)}"`];
        case 'deleted':
          return [`${id} deleted: "${full(a.path)}"`];
        case 'created':
          return [`${id} created: "${full(a.path)}"`, `${id} written to: "${full(a.path)}"`];
        case 'written':
          return [`${id} written to: "${full(a.path)}"`];
        case 'renamed':
          return [`File renamed with id "${a.fileId}" from "${full(a.from)}" to "${full(a.to)}"`];
      }
    }
    // 29 writes a new file at the root with two slashes (its folder `/`, then `/name`).
    const own = (p: string, isNew = false): string =>
      `${isNew && !p.includes('/') ? '//' : '/'}${p}`;
    switch (a.kind) {
      case 'accessed':
        return [`File accessed: "${own(a.path)}"`];
      case 'deleted':
        return [`File deleted: "${own(a.path)}"`];
      case 'created':
        return [`File created: "${own(a.path, true)}"`, `File written to: "${own(a.path, true)}"`];
      case 'written':
        return [`File updated: "${own(a.path)}"`, `File written to: "${own(a.path)}"`];
      case 'renamed':
        return [`File renamed: "${own(a.from)}" to "${own(a.to)}"`];
    }
  }

  #write(user: string, message: string): void {
    const request = CURRENT.getStore();
    if (request === undefined) return;
    const time = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, '+00:00');
    this.#lines.push(
      JSON.stringify({
        reqId: request.id,
        level: 1,
        time,
        remoteAddr: '127.0.0.1',
        user,
        app: 'admin_audit',
        method: request.method,
        url: request.url,
        ...(this.series === 34 ? { scriptName: '/remote.php' } : {}),
        message,
        userAgent: request.userAgent,
        version: `${this.version}.1`,
        data: { app: 'admin_audit' },
      }),
    );
  }
}
