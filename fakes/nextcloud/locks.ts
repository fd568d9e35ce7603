/**
 * files_lock locks, keyed by file id (a lock follows its file when it is moved),
 * and the RFC 4918 `If` header.
 */

export interface LockRecord {
  /** 'token' = RFC 4918 LOCK (lock type 2); 'user' = X-User-Lock / OCS lock (type 0). */
  type: 'token' | 'user';
  owner: string;
  /** `opaquelocktoken:<uuid>` for token locks, `files_lock/<uuid>` for user locks. */
  token: string;
  fileId: number;
  /** Unix seconds. */
  createdAt: number;
  /** Seconds; 0 = infinite. */
  timeoutSeconds: number;
  depth: '0' | 'infinity';
  /** Text of the LOCK body's `<d:owner>` (href or plain text). */
  ownerText: string;
  ownerIsHref: boolean;
}

export class LockTable {
  readonly #byFile = new Map<number, LockRecord>();

  /** `changed` runs when a file is locked or unlocked: files_lock gives it a new etag. */
  readonly #changed: (fileId: number) => void = () => undefined;

  constructor(changed: (fileId: number) => void = () => undefined) {
    this.#changed = changed;
  }

  get(fileId: number): LockRecord | undefined {
    return this.#byFile.get(fileId);
  }

  set(lock: LockRecord): void {
    this.#byFile.set(lock.fileId, lock);
    this.#changed(lock.fileId);
  }

  delete(fileId: number): void {
    if (this.#byFile.delete(fileId)) this.#changed(fileId);
  }

  clear(): void {
    this.#byFile.clear();
  }
}

export interface IfCondition {
  not: boolean;
  kind: 'token' | 'etag';
  /** Token without angle brackets, or the etag as written (quotes included). */
  value: string;
}

export interface IfList {
  /** The tagged resource URI, or undefined for the request URI. */
  resource: string | undefined;
  conditions: IfCondition[];
}

/** RFC 4918 §10.4 `If` header; undefined when it does not parse. */
export function parseIfHeader(header: string): IfList[] | undefined {
  const lists: IfList[] = [];
  let resource: string | undefined;
  let i = 0;
  const skip = () => {
    while (i < header.length && /\s/.test(header[i] ?? '')) i++;
  };
  skip();
  if (i >= header.length) return undefined;
  while (i < header.length) {
    if (header[i] === '<') {
      const end = header.indexOf('>', i);
      if (end === -1) return undefined;
      resource = header.slice(i + 1, end);
      i = end + 1;
    } else if (header[i] === '(') {
      i++;
      const conditions: IfCondition[] = [];
      for (;;) {
        skip();
        if (header[i] === ')') {
          i++;
          break;
        }
        let not = false;
        if (header.slice(i, i + 3).toLowerCase() === 'not') {
          not = true;
          i += 3;
          skip();
        }
        const open = header[i];
        const close = open === '<' ? '>' : open === '[' ? ']' : undefined;
        if (!close) return undefined;
        const end = header.indexOf(close, i);
        if (end === -1) return undefined;
        conditions.push({
          not,
          kind: open === '<' ? 'token' : 'etag',
          value: header.slice(i + 1, end),
        });
        i = end + 1;
      }
      if (conditions.length === 0) return undefined;
      lists.push({ resource, conditions });
    } else {
      return undefined;
    }
    skip();
  }
  return lists.length > 0 ? lists : undefined;
}
