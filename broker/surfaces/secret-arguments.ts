/**
 * Finds a configured secret in a tool call's arguments, before anything else sees them.
 *
 * Security: an agent (or a prompt injected into it) can put the agent token, the transfer
 * token, the bot token or a Nextcloud password into a reason, a path, a query or a cursor,
 * raw or encoded. Scrubbing it from the audit log is not enough: the owner would be shown
 * it in the approval channel, Nextcloud would receive it, and the scrubbed audit line
 * could no longer tell `Docs/<token>` from a literal `Docs/[redacted]`. So a call whose
 * arguments hold a secret in any form the scrubber knows is refused as a whole, naming
 * the field and never the value. Every string counts, keys included, at any depth; the
 * walk is iterative, so no nesting depth can overflow the stack.
 */
import { escapeForReason } from '../base/text.js';

const MAX_FIELD = 200;
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

function child(parent: string, key: string): string {
  const step = PLAIN_KEY.test(key) ? key : `[${JSON.stringify(escapeForReason(key, 40))}]`;
  if (parent === '') return step;
  return step.startsWith('[') ? `${parent}${step}` : `${parent}.${step}`;
}

/** A field name fit for a message: printable, bounded. */
function shown(field: string): string {
  const name = field === '' ? 'the arguments' : field;
  return name.length > MAX_FIELD ? `${name.slice(0, MAX_FIELD - 1)}…` : name;
}

/**
 * The first field (in document order) whose value, or whose key, holds a secret, as
 * `items[2].path` (a key: `a key of items[2]`); undefined when none does.
 */
export function secretField(args: unknown, holds: (text: string) => boolean): string | undefined {
  const stack: [value: unknown, field: string][] = [[args, '']];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [value, field] = next;
    if (typeof value === 'string') {
      if (holds(value)) return shown(field);
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    const children: [unknown, string][] = [];
    if (Array.isArray(value)) {
      value.forEach((item, i) => children.push([item, `${field}[${i}]`]));
    } else {
      for (const [key, item] of Object.entries(value)) {
        if (holds(key)) return `a key of ${shown(field)}`;
        children.push([item, child(field, key)]);
      }
    }
    // Reversed onto the stack, so the first child is looked at first.
    for (let i = children.length - 1; i >= 0; i -= 1) stack.push(children[i] as [unknown, string]);
  }
  return undefined;
}
