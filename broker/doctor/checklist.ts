/**
 * The doctor's result: sections of checks, each passed, failed (with the fix), a
 * warning, or skipped because an earlier check failed. Rendering is plain text.
 */
export type CheckStatus = 'pass' | 'fail' | 'warn' | 'skip';

export interface Check {
  status: CheckStatus;
  /** What was checked, and for a pass what was found. One line. */
  label: string;
  /** For a failure: what was observed (status, error code). */
  detail?: string;
  /** For a failure or warning: what to do. */
  fix?: string;
}

export interface CheckSection {
  title: string;
  checks: Check[];
}

const MARK: Record<CheckStatus, string> = { pass: '✓', fail: '✗', warn: '!', skip: '–' };

export const pass = (label: string): Check => ({ status: 'pass', label });
/** `fix` may be left out only when the label already says what to do (config errors). */
export const fail = (label: string, fix?: string, detail?: string): Check => ({
  status: 'fail',
  label,
  ...(fix === undefined ? {} : { fix }),
  ...(detail === undefined ? {} : { detail }),
});
export const warn = (label: string, fix?: string): Check =>
  fix === undefined ? { status: 'warn', label } : { status: 'warn', label, fix };
export const skip = (label: string): Check => ({ status: 'skip', label });

export function countFailures(sections: readonly CheckSection[]): number {
  return sections.reduce((n, s) => n + s.checks.filter((c) => c.status === 'fail').length, 0);
}

export function renderChecklist(sections: readonly CheckSection[]): string {
  const out: string[] = [];
  for (const section of sections) {
    out.push(section.title);
    for (const check of section.checks) {
      out.push(`  ${MARK[check.status]} ${check.label}`);
      if (check.detail !== undefined) out.push(`      found: ${check.detail}`);
      if (check.fix !== undefined) out.push(`      fix:   ${check.fix}`);
    }
    out.push('');
  }
  const failures = countFailures(sections);
  out.push(
    failures === 0
      ? 'All checks passed.'
      : `${failures} check${failures === 1 ? '' : 's'} failed; fix ${failures === 1 ? 'it' : 'them'} and run \`broker doctor\` again.`,
  );
  return `${out.join('\n')}\n`;
}
