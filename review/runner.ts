/**
 * The review runner: runs groups of cases, each stating the verdict it expects, and
 * prints one line per case (`✓ name — expected X, got Y`, or `✗` for a surprise) and a
 * closing `N passed, M failed` line. A case that throws, or outlives its time limit,
 * is a surprise. Cases marked with a `finding` reproduce a bug the review reported
 * (its id, e.g. `F3`): they keep failing (and the run keeps exiting 1) until the owner
 * fixes the code — never by editing the case.
 */

/** A verdict is a short word or phrase the case computes from what actually happened. */
export type Verdict = string;

export interface Case {
  readonly name: string;
  readonly expect: Verdict;
  /** The id of a reported finding this case reproduces (e.g. `F3`). */
  readonly finding?: string;
  /** Per-case limit; default 15 s. */
  readonly timeoutMs?: number;
  run(): Promise<Verdict> | Verdict;
}

/** What a group's setup returns: the cases (built once the context exists) and a teardown. */
export interface Built {
  readonly cases: readonly Case[];
  readonly teardown?: () => Promise<void> | void;
}

export interface Group {
  readonly title: string;
  build(): Promise<Built> | Built;
}

export interface CaseResult {
  readonly group: string;
  readonly name: string;
  readonly expect: Verdict;
  readonly got: Verdict;
  readonly ok: boolean;
  readonly finding?: string;
  readonly ms: number;
}

export interface RunSummary {
  readonly results: readonly CaseResult[];
  readonly passed: number;
  readonly failed: number;
}

const DEFAULT_TIMEOUT_MS = 15_000;

function describeThrown(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return `threw ${text.split('\n')[0]?.slice(0, 160) ?? ''}`;
}

/** Runs `fn` and turns a throw or a timeout into a verdict, so one case never stops the run. */
export async function settle(
  fn: () => Promise<Verdict> | Verdict,
  timeoutMs: number,
): Promise<Verdict> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Verdict>((resolve) => {
    timer = setTimeout(() => resolve(`timed out after ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(fn), timeout]);
  } catch (error) {
    return describeThrown(error);
  } finally {
    clearTimeout(timer);
  }
}

/** The printed line of one result. */
export function formatResult(r: CaseResult): string {
  const mark = r.ok ? '✓' : '✗';
  const tag = r.finding === undefined ? '' : `[${r.finding}] `;
  return `${mark} ${tag}${r.name} — expected ${r.expect}, got ${r.got}`;
}

export function summaryLine(s: Pick<RunSummary, 'passed' | 'failed'>): string {
  return `${s.passed} passed, ${s.failed} failed`;
}

/**
 * Runs every group in order (cases one at a time, so state probes do not disturb each
 * other), writing lines through `print` as results arrive.
 */
export async function runGroups(
  groups: readonly Group[],
  print: (line: string) => void,
  opts: { filter?: (group: string, name: string) => boolean } = {},
): Promise<RunSummary> {
  const results: CaseResult[] = [];
  for (const group of groups) {
    print(`\n# ${group.title}`);
    const started = Date.now();
    let built: Built | undefined;
    const setup = await settle(async () => {
      built = await group.build();
      return 'ready';
    }, 60_000);
    if (built === undefined) {
      const r: CaseResult = {
        group: group.title,
        name: `${group.title}: setup`,
        expect: 'ready',
        got: setup,
        ok: false,
        ms: Date.now() - started,
      };
      results.push(r);
      print(formatResult(r));
      continue;
    }
    try {
      for (const c of built.cases) {
        if (opts.filter !== undefined && !opts.filter(group.title, c.name)) continue;
        const t0 = Date.now();
        const got = await settle(() => c.run(), c.timeoutMs ?? DEFAULT_TIMEOUT_MS);
        const r: CaseResult = {
          group: group.title,
          name: c.name,
          expect: c.expect,
          got,
          ok: got === c.expect,
          ...(c.finding === undefined ? {} : { finding: c.finding }),
          ms: Date.now() - t0,
        };
        results.push(r);
        print(formatResult(r));
      }
    } finally {
      const teardown = built.teardown;
      if (teardown !== undefined) {
        const closed = await settle(async () => {
          await teardown();
          return 'closed';
        }, 20_000);
        if (closed !== 'closed') print(`  (teardown of "${group.title}": ${closed})`);
      }
    }
  }
  const passed = results.filter((r) => r.ok).length;
  return { results, passed, failed: results.length - passed };
}
