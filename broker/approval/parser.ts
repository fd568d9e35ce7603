/**
 * The approver's command language, shared by the Matrix and the console gateway.
 *
 * Allows exactly: `approve N`, `approve N 1,3`, `approve N 8h`, `approve N 1,3 8h`,
 * `deny N`, `deny all`, `show N`, `revoke N`, `revoke <instance>`, `revoke all`, `status`,
 * `help`, `undo SEQ`, `undo --request N` (each with `--dry-run` after it, as `broker undo`
 * takes them).
 * Verbs (and the rest of the line) are case-insensitive; surrounding whitespace is
 * ignored; words are separated by ASCII spaces or tabs. Everything else is refused
 * with a reason, never repaired: a command grants access, so a guess is a risk.
 *
 * What counts as "addressed to the bot": a message whose first word is a verb, or
 * looks like a mistyped verb (`aprove 3`, `Approved!`, `approve3`) followed by nothing
 * or by command-like arguments. Those get an answer (`{ ok: false, reason }`) so the
 * owner learns the command did nothing. Any other message is chatter: `null`, ignored.
 *
 * `revoke X`: `all` is the keyword and a (signed) number is a request, so an instance
 * named `all` or `007` cannot be revoked by name (use its request numbers or `all`).
 */
import { editDistance } from '../base/edit-distance.js';
import { LINE_BREAK } from '../base/text.js';
import { INSTANCE_NAME } from '../base/protocol.js';
import { formatDuration, tryParseDuration } from '../config.js';
import type { Command } from './command.js';

export type ParseResult =
  | { ok: true; command: Command }
  | {
      ok: false;
      /** For the console and the room: the problem, then where the commands are. */
      reason: string;
      /**
       * The problem alone, with no verb before it and no hint after it: what `broker VERB`
       * in a shell says (its own next step there is its --help, not "help").
       */
      problem: string;
      /** The command it was meant as, when there is one. */
      verb?: Verb;
    };

const VERBS = ['approve', 'deny', 'revoke', 'show', 'status', 'help', 'undo'] as const;
export type Verb = (typeof VERBS)[number];

/** Appended to every refusal so the owner sees the accepted forms. */
export const HELP_HINT = 'Type "help" for the commands.';

// Instance names as config allows them (lowercase letters, digits, `_`, `-`); anything
// else cannot name an instance.
const INSTANCE_TOKEN = INSTANCE_NAME;
// Security: commands are plain ASCII. This refuses look-alike digits (Arabic-Indic
// `٣`, fullwidth `３`), invisible characters (zero-width, bidi controls), line breaks
// that could smuggle a second command, and homoglyph letters, in one rule.
const PLAIN_COMMAND = /^[\x20-\x7e\t]*$/;
const MAX_COMMAND_LENGTH = 200;
// Request and item numbers: positive, no sign, no leading zero, at most 15 digits
// (below Number.MAX_SAFE_INTEGER, so the value is exact).
const NUMBER = /^[1-9][0-9]{0,14}$/;
const ITEM_LIST = /^[0-9]+(?:,[0-9]+)*$/;

type Refusal = Extract<ParseResult, { ok: false }>;
/** A refusal whose text says itself which command it is about (or is about none). */
const fail = (sentence: string, verb?: Verb): Refusal => ({
  ok: false,
  reason: `${sentence} ${HELP_HINT}`,
  problem: sentence.replace(/\.$/, ''),
  ...(verb === undefined ? {} : { verb }),
});
/** A refusal of `verb`'s words: the console says `verb: detail`, a shell `broker verb: detail`. */
const refuse = (verb: Verb, detail: string): Refusal => ({
  ...fail(`${verb}: ${detail}`, verb),
  problem: detail.replace(/\.$/, ''),
});
const ok = (command: Command): ParseResult => ({ ok: true, command });

function isVerb(word: string): word is Verb {
  return (VERBS as readonly string[]).includes(word);
}

/** The verb a non-verb first word was probably meant to be, if any. */
function mistypedVerb(word: string): Verb | undefined {
  if (word.length === 0 || word.length > 16) return undefined;
  for (const verb of VERBS) {
    // Short verbs (deny, help) allow one slip, longer ones two: "hello" is chatter,
    // "aprove" and "approved!" are not.
    const limit = verb.length >= 6 ? 2 : 1;
    if (editDistance(word, verb) <= limit) return verb;
    // `approve3`, `deny,4`: a verb run into its argument.
    if (word.startsWith(verb) && /^[^\p{L}]/u.test(word.slice(verb.length))) return verb;
  }
  return undefined;
}

/** Arguments a command would take: numbers (any script), lists, durations, `all`. */
function looksLikeArguments(words: readonly string[]): boolean {
  return words.every((w) => w === 'all' || /^[#+-]?[\p{N},.:]+\p{L}{0,2}[.!]?$/u.test(w));
}

function parseNumber(token: string | undefined, what: string): number | string {
  if (token === undefined || token === '') return `${what} is missing.`;
  if (NUMBER.test(token)) return Number(token);
  if (/^[+-]/.test(token)) return `${what} must be a plain number without a sign (got "${token}").`;
  if (/^0+$/.test(token)) return `${what} must be 1 or more (got "${token}").`;
  if (/^0[0-9]+$/.test(token)) return `${what} must be written without leading zeros.`;
  if (/^[0-9]+$/.test(token)) return `${what} is too large.`;
  return `${what} must be a number (got "${token}").`;
}

function parseItems(token: string): number[] | string {
  if (!ITEM_LIST.test(token)) {
    return `item numbers must be a comma-separated list like 1,3 with no spaces or empty entries (got "${token}").`;
  }
  const items: number[] = [];
  for (const part of token.split(',')) {
    const n = parseNumber(part, 'an item number');
    if (typeof n === 'string') return n;
    if (items.includes(n)) return `item ${n} is listed twice.`;
    items.push(n);
  }
  return items.sort((a, b) => a - b);
}

function parseExpiry(token: string): number | string {
  const ms = tryParseDuration(token);
  if (ms !== undefined) return ms;
  if (/^0+[smhd]$/.test(token)) {
    return `the expiry must be longer than zero, like 30m, 8h or 7d (got "${token}").`;
  }
  if (/^[0-9]+[smhd]$/.test(token)) return `the expiry "${token}" is too large.`;
  return `the expiry must be a whole number and one unit, s, m, h or d, like 30m, 8h or 7d (got "${token}").`;
}

function parseApprove(args: readonly string[]): ParseResult {
  const request = parseNumber(args[0], 'the request number');
  if (typeof request === 'string') return refuse('approve', request);
  const rest = args.slice(1);
  if (rest.length > 2)
    return refuse('approve', 'too many words; the form is "approve N [items] [expiry]".');
  let items: number[] | undefined;
  let durationMs: number | undefined;
  const [first, second] = rest;
  if (first !== undefined) {
    if (/^[0-9,]+$/.test(first)) {
      const parsed = parseItems(first);
      if (typeof parsed === 'string') return refuse('approve', parsed);
      items = parsed;
    } else if (second !== undefined) {
      return refuse(
        'approve',
        `item numbers come first, then the expiry, like "approve ${request} 1,3 8h".`,
      );
    } else {
      const parsed = parseExpiry(first);
      if (typeof parsed === 'string') return refuse('approve', parsed);
      durationMs = parsed;
    }
  }
  if (second !== undefined) {
    const parsed = parseExpiry(second);
    if (typeof parsed === 'string') return refuse('approve', parsed);
    durationMs = parsed;
  }
  return ok({
    kind: 'approve',
    request,
    ...(items === undefined ? {} : { items }),
    ...(durationMs === undefined ? {} : { durationMs }),
  });
}

function parseRevoke(args: readonly string[]): ParseResult {
  if (args.length !== 1) {
    return fail('revoke takes one word: a request number, an instance name, or "all".', 'revoke');
  }
  const target = args[0] ?? '';
  if (target === 'all') return ok({ kind: 'revoke', target: 'all' });
  if (/^[+-]?[0-9]+$/.test(target)) {
    const request = parseNumber(target, 'the request number');
    if (typeof request === 'string') return refuse('revoke', request);
    return ok({ kind: 'revoke', target: { request } });
  }
  if (!INSTANCE_TOKEN.test(target)) {
    return refuse('revoke', `"${target}" is not a request number, an instance name, or "all".`);
  }
  return ok({ kind: 'revoke', target: { instance: target } });
}

const UNDO_FORMS = '"undo SEQ" or "undo --request N", each with "--dry-run" after it if you like';

function parseUndo(args: readonly string[]): ParseResult {
  const dryRun = args[args.length - 1] === '--dry-run';
  const rest = dryRun ? args.slice(0, -1) : args;
  const [first, second, ...more] = rest;
  if (more.length > 0 || first === undefined || rest.includes('--dry-run'))
    return fail(`undo takes ${UNDO_FORMS}.`, 'undo');
  if (first === '--request') {
    const request = parseNumber(second, 'the request number');
    if (typeof request === 'string') return refuse('undo', request);
    return ok({ kind: 'undo', target: { request }, dryRun });
  }
  if (second !== undefined) return fail(`undo takes ${UNDO_FORMS}.`, 'undo');
  const seq = parseNumber(first, 'the record number (the seq of the operation)');
  if (typeof seq === 'string') return refuse('undo', seq);
  return ok({ kind: 'undo', target: { seq }, dryRun });
}

function parseVerb(verb: Verb, args: readonly string[]): ParseResult {
  switch (verb) {
    case 'approve':
      return parseApprove(args);
    case 'deny': {
      if (args.length !== 1) {
        return fail('deny takes one request number or "all": "deny N" or "deny all".', 'deny');
      }
      if (args[0] === 'all') return ok({ kind: 'deny_all' });
      const request = parseNumber(args[0], 'the request number');
      if (typeof request === 'string') return refuse('deny', request);
      return ok({ kind: 'deny', request });
    }
    case 'show': {
      if (args.length !== 1)
        return fail('show takes exactly one request number: "show N".', 'show');
      const request = parseNumber(args[0], 'the request number');
      if (typeof request === 'string') return refuse('show', request);
      return ok({ kind: 'show', request });
    }
    case 'revoke':
      return parseRevoke(args);
    case 'undo':
      return parseUndo(args);
    case 'status':
    case 'help':
      if (args.length !== 0) return fail(`${verb} takes no arguments.`, verb);
      return ok({ kind: verb });
  }
}

/** Why a message that starts with a verb is not plain ASCII, as precisely as we can say. */
function impurityReason(text: string): string {
  if (/[^\P{Nd}0-9]/u.test(text)) return 'use the digits 0-9 (other digit forms are refused).';
  if (LINE_BREAK.test(text)) return 'one command per message, on one line.';
  if (/[^\S \t]/u.test(text)) return 'separate the words with plain spaces.';
  return 'commands are plain ASCII letters, digits, commas and spaces; this one has other characters (perhaps invisible ones).';
}

/**
 * Parses one message body (for Matrix: with the reply fallback quote already removed).
 * `null`: not addressed to the broker, ignore it. Never throws.
 */
export function parseCommand(text: string): ParseResult | null {
  if (typeof text !== 'string') return null;
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const words = trimmed.split(/\s+/u);
  const first = (words[0] ?? '').toLowerCase();
  if (!isVerb(first)) {
    const meant = mistypedVerb(first);
    if (meant === undefined || !looksLikeArguments(words.slice(1).map((w) => w.toLowerCase()))) {
      return null;
    }
    return fail(
      `Not understood: "${first.slice(0, 16)}" is not a command (did you mean "${meant}"?).`,
    );
  }
  if (trimmed.length > MAX_COMMAND_LENGTH) return refuse(first, 'the message is too long.');
  if (!PLAIN_COMMAND.test(trimmed)) return refuse(first, impurityReason(trimmed));
  const [, ...args] = trimmed.toLowerCase().split(/[ \t]+/);
  return parseVerb(first, args);
}

/** The canonical text of a command; `parseCommand(renderCommand(c))` gives `c` back. */
export function renderCommand(command: Command): string {
  switch (command.kind) {
    case 'approve': {
      const parts = ['approve', String(command.request)];
      if (command.items !== undefined) parts.push(command.items.join(','));
      if (command.durationMs !== undefined) parts.push(formatDuration(command.durationMs));
      return parts.join(' ');
    }
    case 'deny':
      return `deny ${command.request}`;
    case 'deny_all':
      return 'deny all';
    case 'show':
      return `show ${command.request}`;
    case 'revoke': {
      const t = command.target;
      if (t === 'all') return 'revoke all';
      return 'request' in t ? `revoke ${t.request}` : `revoke ${t.instance}`;
    }
    case 'undo': {
      const t = command.target;
      const what = 'seq' in t ? `undo ${t.seq}` : `undo --request ${t.request}`;
      return command.dryRun ? `${what} --dry-run` : what;
    }
    case 'status':
    case 'help':
      return command.kind;
  }
}
