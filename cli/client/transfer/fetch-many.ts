/**
 * `broker fetch` of several files in one command: each file is fetched exactly as alone
 * (download.ts: its own ticket, wall decision and audit records on the broker, its own
 * verification and record here), a few at a time over the same keep-alive connections,
 * so an agent pays the command's start-up once instead of once per file.
 */
import { CliError, type CliErrorCode } from './errors.js';
import { asCliError, type Outcome } from './output.js';
import type { RemoteTarget } from './target.js';

/** Files fetched at once: enough to hide each one's round trips, few for the server. */
export const FETCH_PARALLEL = 4;

/** One file's result in the `files` list: its outcome, or why it failed. */
type FileResult = Outcome & { target: string };

/** Severity of a cause when files failed differently: the command fails with the worst. */
const WORST_FIRST: readonly CliErrorCode[] = [
  'verification',
  'infrastructure',
  'clobber',
  'refused',
  'usage',
];

const nameOf = (t: RemoteTarget): string => `${t.instance}:${t.path}`;

/**
 * Fetches every target with `fetchOne`; answers `{ status: 'ok', files }` when all
 * succeeded, else fails with every file's result and the worst exit code among them.
 */
export async function fetchMany(
  targets: readonly RemoteTarget[],
  fetchOne: (target: RemoteTarget) => Promise<Outcome>,
): Promise<Outcome> {
  const unique = [...new Map(targets.map((t) => [nameOf(t), t])).values()];
  const results: FileResult[] = new Array<FileResult>(unique.length);
  const codes = new Set<CliErrorCode>();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < unique.length; i = next++) {
      const target = unique[i] as RemoteTarget;
      try {
        results[i] = { target: nameOf(target), ...(await fetchOne(target)) };
      } catch (error) {
        const failure = asCliError(error);
        codes.add(failure.code);
        results[i] = {
          target: nameOf(target),
          status: 'failed',
          ...failure.fields,
          error: failure.message,
          next_step: failure.nextStep,
          exit_code: failure.exitCode,
        };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(FETCH_PARALLEL, unique.length) }, worker));
  if (codes.size === 0) return { status: 'ok', files: results };
  const failed = results.filter((r) => r.status === 'failed');
  throw new CliError(
    WORST_FIRST.find((c) => codes.has(c)) ?? 'usage',
    `${failed.length} of ${results.length} files could not be fetched (${failed.map((r) => r.target).join(', ')})`,
    'see each file in `files` for its cause and next step; the others were fetched',
    { files: results },
  );
}
