/**
 * docs/contracts.md §4 lists every `reason` of a decision refused in the approval room;
 * the code declares them once (REFUSAL_REASONS, and `not_approver` for strangers). The
 * two must agree: a new reason without its row, or a row without its reason, fails.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REFUSAL_REASONS } from '../../broker/approval/matrix/e2ee/refused-decisions.js';

const CONTRACTS = readFileSync(join(import.meta.dirname, '../../docs/contracts.md'), 'utf8');

function documentedReasons(): string[] {
  const lines = CONTRACTS.split('\n');
  const header = lines.findIndex((l) => /^\s*\| `reason`\s+\| the event/.test(l));
  if (header < 0) return [];
  const rows: string[] = [];
  for (const line of lines.slice(header + 2)) {
    const m = /^\s*\| `([a-z_]+)`\s+\|/.exec(line);
    if (m === null) break;
    rows.push(m[1] as string);
  }
  return rows;
}

describe('the refusal reasons of the approval room in docs/contracts.md', () => {
  it('are found (the check is not vacuous)', () => {
    expect(documentedReasons().length).toBeGreaterThan(5);
  });

  it('are exactly the ones the code gives', () => {
    expect([...documentedReasons()].sort()).toEqual(['not_approver', ...REFUSAL_REASONS].sort());
  });
});
