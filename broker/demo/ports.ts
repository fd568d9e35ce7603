/** Port choice for the demo: the usual broker port when it is free, else any free one. */
import { createServer } from 'node:net';

/** Resolves true when `port` on `host` can be listened on right now. */
export function portIsFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host, exclusive: true }, () => {
      probe.close(() => resolve(true));
    });
  });
}

/**
 * `preferred` if free (checked just before the broker listens; another program could
 * still take it in between, then the start fails and says so), else 0: the broker then
 * listens on a free port and reports which.
 */
export async function choosePort(
  preferred: number,
  host: string,
): Promise<{ port: number; preferredBusy: boolean }> {
  return (await portIsFree(preferred, host))
    ? { port: preferred, preferredBusy: false }
    : { port: 0, preferredBusy: true };
}
