/**
 * node's file system for the audit log, with the faults the tests and the fault runs
 * need, produced without mocks: writes that fail with ENOSPC while switched on (the
 * disk filled up), or, once `failEverything(code)` is called, every open, write, fsync
 * and rename failing with that errno (ENOSPC; EROFS: the file system was remounted
 * read-only, as the kernel does after I/O errors). `onWrite` shows each write's text
 * just before it is written (tests act "between the audit line and the call").
 */
import { nodeAuditFs, type AuditFs } from '../broker/audit/index.js';

export interface FaultyAuditFs {
  readonly fs: AuditFs;
  failWrites(on: boolean): void;
  failEverything(code: 'ENOSPC' | 'EROFS'): void;
  onWrite(fn: ((text: string) => void) | undefined): void;
}

export function faultyAuditFs(): FaultyAuditFs {
  let failingWrites = false;
  let failingAll: string | undefined;
  let hook: ((text: string) => void) | undefined;
  const error = (op: string): Error =>
    Object.assign(new Error(`${failingAll}: ${op} failed`), { code: failingAll });
  const guard = <T>(op: string, run: () => Promise<T>): Promise<T> =>
    failingAll === undefined ? run() : Promise.reject(error(op));
  const fs: AuditFs = {
    ...nodeAuditFs,
    rename: (from, to) => guard('rename', () => nodeAuditFs.rename(from, to)),
    async open(path, flags, mode) {
      const handle = await guard('open', () => nodeAuditFs.open(path, flags, mode));
      return {
        read: (b, o, l, p) => handle.read(b, o, l, p),
        stat: () => handle.stat(),
        close: () => handle.close(),
        sync: () => guard('fsync', () => handle.sync()),
        write: (data) => {
          hook?.(Buffer.from(data).toString('utf8'));
          if (failingWrites) {
            return Promise.reject(
              Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }),
            );
          }
          return guard('write', () => handle.write(data));
        },
      };
    },
  };
  return {
    fs,
    failWrites: (on) => (failingWrites = on),
    failEverything: (code) => (failingAll = code),
    onWrite: (fn) => (hook = fn),
  };
}
