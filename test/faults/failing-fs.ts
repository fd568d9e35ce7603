/**
 * node's file system for the audit log, except that once `fail(code)` is called every
 * write, fsync and rename fails with that errno (ENOSPC: the disk filled up; EROFS: the
 * file system was remounted read-only, as the kernel does after I/O errors).
 */
import { nodeAuditFs, type AuditFs } from '../../broker/audit/index.js';

export function failingAuditFs(): { fs: AuditFs; fail(code: 'ENOSPC' | 'EROFS'): void } {
  let failing: string | undefined;
  const error = (op: string): Error =>
    Object.assign(new Error(`${failing}: ${op} failed`), { code: failing });
  const guard = <T>(op: string, run: () => Promise<T>): Promise<T> =>
    failing === undefined ? run() : Promise.reject(error(op));
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
        write: (data) => guard('write', () => handle.write(data)),
      };
    },
  };
  return { fs, fail: (code) => (failing = code) };
}
