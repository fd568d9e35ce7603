/**
 * The timers the operations run on, injected so that tests drive them: the lifecycle
 * sweep's interval, and the one-shot timer that stops an operation at the instant its
 * grant expires (in-flight.ts).
 */
export interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const nodeTimers: Timers = {
  setInterval: (fn, ms) => {
    const handle = setInterval(fn, ms);
    handle.unref();
    return handle;
  },
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** The longest delay a Node timer takes (about 24.8 days); longer waits are chained. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
