/**
 * Bounds the memory a relay leaves behind. Every chunk a transfer relays arrives in a
 * buffer of its own (a socket read, up to 64 KiB) outside V8's heap, and dies as soon as
 * it is passed on. V8 frees such buffers when it collects their short-lived wrappers, but
 * a relay allocates almost nothing on the heap itself, so left alone V8 collects only
 * once tens of MiB of them have piled up, and then with full mark-compacts. A minor
 * collection (a scavenge, under a millisecond here: the young generation holds little
 * but those wrappers) every RELEASE_EVERY_BYTES relayed frees them in time.
 *
 * Measured on the real-server transfers (bench/RESULTS.md): the broker's peak RSS over a
 * 256 MiB push and fetch fell from ~195 to ~130 MiB, and its CPU per transfer fell too,
 * since the mark-compacts the piled-up memory used to force no longer run.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How many relayed bytes may wait for a collection (all transfers together). */
export const RELEASE_EVERY_BYTES = 8 * 1024 * 1024;

/** V8's collector, as `--expose-gc` offers it. */
export type Collect = (options: { type: 'minor'; execution: 'sync' }) => void;

/**
 * V8's collector, reached without a command-line flag: `--expose-gc` set at run time
 * gives the function to a new context only, never to the broker's own global scope.
 */
function v8Collector(): Collect {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as Collect;
}

/** A counter that runs `collect` (made on first use) once every `every` bytes. */
export function releaser(every: number, collector: () => Collect = v8Collector) {
  let collect: Collect | undefined;
  let pending = 0;
  return (bytes: number): void => {
    pending += bytes;
    if (pending < every) return;
    pending = 0;
    collect ??= collector();
    collect({ type: 'minor', execution: 'sync' });
  };
}

/** Counts `bytes` relayed; collects the young generation once RELEASE_EVERY_BYTES passed. */
export const relayed = releaser(RELEASE_EVERY_BYTES);
