/**
 * secretField(): where in a tool call's arguments a configured secret sits, named the way
 * a refusal names it, for any shape an attacker can send (deep nesting, odd keys).
 */
import { describe, expect, it } from 'vitest';
import { createSecretGuard } from '../../broker/base/scrub.js';
import { secretField } from '../../broker/surfaces/secret-arguments.js';

const SECRET = 'planted-secret-0123456789abcdefghij';
const { holds } = createSecretGuard([SECRET]);

describe('naming the field that holds a secret', () => {
  it('names array items and nested keys as items[2].path, the first in document order', () => {
    const args = {
      instance: 'personal',
      items: [{ path: 'a' }, { path: 'b' }, { path: `x/${SECRET}` }],
      reason: SECRET,
    };
    expect(secretField(args, holds)).toBe('items[2].path');
    expect(secretField({ a: 'fine', b: ['fine', 1, null, true] }, holds)).toBeUndefined();
    expect(secretField(SECRET, holds)).toBe('the arguments');
  });

  it('a key holding a secret is named by where it is, never by the key itself', () => {
    expect(secretField({ items: [{ [SECRET]: 'v' }] }, holds)).toBe('a key of items[0]');
  });

  it('odd keys are shown escaped and quoted; very long field names are cut', () => {
    const field = secretField({ 'we\u202eird key': { v: SECRET } }, holds) as string;
    expect(field).toBe('["we\\\\u{202E}ird key"].v');
    const deep = secretField(
      {
        ['k'.repeat(60)]: { ['m'.repeat(60)]: { ['n'.repeat(60)]: { ['o'.repeat(60)]: SECRET } } },
      },
      holds,
    ) as string;
    expect(deep.length).toBeLessThanOrEqual(200);
    expect(deep.endsWith('…')).toBe(true);
  });

  it('two hundred thousand levels of nesting neither overflow the stack nor hide the secret', () => {
    let value: unknown = SECRET;
    for (let i = 0; i < 200_000; i += 1) value = [value];
    const field = secretField(value, holds) as string;
    expect(field.startsWith('[0][0]')).toBe(true);
  });
});
