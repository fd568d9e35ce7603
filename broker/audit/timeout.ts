import { AuditError } from './errors.js';

/**
 * Rejects with AuditError 'timeout' when `work` has not settled within `ms`. The work is
 * not cancelled (fs calls cannot be); if it settles later, that is ignored.
 */
export async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new AuditError('timeout', `audit ${what} did not finish within ${ms} ms`)),
      ms,
    );
  });
  // A hung operation that settles later must not become an unhandled rejection.
  work.catch(() => undefined);
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
