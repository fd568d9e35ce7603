/**
 * The four tools of `broker mcp`: `fetch`, `push`, `checkout` and `checkin`, each the
 * client command of that name with the same arguments (INSTANCE:PATH as `target`, LOCAL
 * as `local`, each `--flag` as a boolean) and the same answer: the one JSON object the
 * command prints, plus its exit code. File content never passes through here: the
 * bytes go between the broker and the local file, as they do for the command line.
 */
import { checkinTransfer } from '../commands/checkin.js';
import { checkoutTransfer } from '../commands/checkout.js';
import { fetchTransfer } from '../commands/fetch.js';
import { pushTransfer } from '../commands/push.js';
import { isObject } from '../transfer/json.js';
import type { ClientTransfer } from '../transfer/run.js';

/** MCP's tool annotations (hints to the client; docs/clients.md). */
export interface ToolAnnotations {
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint: boolean;
}

/** A boolean argument's JSON Schema. */
interface FlagSchema {
  readonly type: 'boolean';
  readonly description: string;
}

export interface TransferTool {
  readonly transfer: ClientTransfer;
  readonly title: string;
  readonly description: string;
  /** The tool's arguments beyond `target` and `local`: the command's flags, as booleans. */
  readonly flags: Readonly<Record<string, FlagSchema>>;
  readonly annotations: ToolAnnotations;
}

const TARGET = {
  type: 'string',
  description: 'the remote file as INSTANCE:PATH, e.g. "personal:Documents/report.odt"',
} as const;

const LOCAL = {
  type: 'string',
  description:
    'a local file path, or a folder (existing, or ending in /) that receives the remote file name; ' +
    'without it the file is staged at <staging folder>/<instance>/<path> (fetch, checkout) or ' +
    'uploaded from where it was last staged (push, checkin)',
} as const;

const FORCE: FlagSchema = {
  type: 'boolean',
  description: 'replace a local file that was edited since it was fetched',
};

/** What every tool answers (structuredContent): the command's JSON object and exit code. */
const OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    status: { type: 'string' },
    exit_code: { type: 'integer' },
    local_path: { type: 'string' },
    size: { type: 'integer' },
    sha256: { type: 'string' },
    // One type per schema (no `type: ["string", "null"]`): portable to every client.
    etag: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    warnings: { type: 'array', items: { type: 'string' } },
    error: { type: 'string' },
    next_step: { type: 'string' },
    code: { type: 'string' },
  },
  required: ['status', 'exit_code'],
} as const;

const ANSWER =
  'Answers the one JSON object `broker CMD` prints (status, local_path, size, sha256, etag, ' +
  'warnings; on failure error, next_step and the broker code) with exit_code; never the content.';
const answerOf = (name: string): string => ANSWER.replace('CMD', name);

/*
 * The hints (MCP: readOnlyHint "does not modify its environment"; destructiveHint "may
 * make destructive updates" rather than only additive ones; idempotentHint "calling it
 * again with the same arguments has no further effect"; openWorldHint "reaches outside
 * a closed domain"), chosen for a client that asks before anything not read-only:
 *
 * - None is read-only. fetch leaves the remote file alone but writes on the agent's host
 *   (the staged copy, the CLI's records, any `local` path given) and with `force`
 *   replaces a locally edited file, so it too is asked for. checkout also locks the
 *   remote file; push and checkin replace it.
 * - All are destructive: push and checkin replace the remote file's content (a new
 *   version; Nextcloud keeps the old one), fetch and checkout with `force` replace a
 *   local one.
 * - fetch and push are idempotent (the same call again answers "unchanged" and transfers
 *   nothing); checkout and checkin are not (the second is refused: already checked out,
 *   not checked out).
 * - All reach the owner's Nextcloud through the broker: open world, as the broker's own
 *   tools that touch files are.
 */
export const TRANSFER_TOOLS: readonly TransferTool[] = [
  {
    transfer: fetchTransfer,
    title: 'Fetch a file',
    description:
      'Stage a remote file locally (needs a read grant), verified by size and sha256, as ' +
      '`broker fetch`. Fetching an unchanged file again transfers nothing. ' +
      answerOf('fetch'),
    flags: {
      force: FORCE,
      recursive: {
        type: 'boolean',
        description:
          'target is a folder: fetch every file below it (each its own grant check), mirrored under local or the staging folder; the answer lists them under files',
      },
    },
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: true,
    },
  },
  {
    transfer: pushTransfer,
    title: 'Push a file',
    description:
      'Upload a local file (needs a write grant), never clobbering: a file never fetched is ' +
      'only created, a fetched one replaced only if unchanged remotely since, as `broker push`. ' +
      answerOf('push'),
    flags: {},
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: true,
    },
  },
  {
    transfer: checkoutTransfer,
    title: 'Check out a file',
    description:
      'Lock a remote file on Nextcloud and stage it (needs a write grant), as `broker checkout`; ' +
      'finish with checkin. ' +
      answerOf('checkout'),
    flags: { force: FORCE },
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    },
  },
  {
    transfer: checkinTransfer,
    title: 'Check in a file',
    description:
      'Upload a checked-out file under its lock, verify it, release the lock, as ' +
      '`broker checkin`. ' +
      answerOf('checkin'),
    flags: {
      abandon: { type: 'boolean', description: 'release the lock without uploading anything' },
    },
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    },
  },
];

/** The tool as tools/list shows it. */
export function toolListing(tool: TransferTool) {
  return {
    name: tool.transfer.name,
    title: tool.title,
    description: tool.description,
    inputSchema: {
      type: 'object',
      properties: { target: TARGET, local: LOCAL, ...tool.flags },
      required: ['target'],
      additionalProperties: false,
    },
    outputSchema: OUTPUT_SCHEMA,
    annotations: tool.annotations,
  };
}

/**
 * The tool's arguments as the command's: flags first, then `--`, INSTANCE:PATH and
 * LOCAL. Arguments that do not fit the input schema are the problem named, for a usage
 * failure the caller can correct.
 */
export function commandArgs(
  tool: TransferTool,
  args: unknown,
): { ok: true; argv: string[] } | { ok: false; problem: string } {
  if (args === undefined) return { ok: false, problem: 'missing argument "target"' };
  if (!isObject(args)) return { ok: false, problem: 'the arguments are not an object' };
  for (const [name, value] of Object.entries(args)) {
    if (name === 'target' || name === 'local') {
      if (typeof value !== 'string') return { ok: false, problem: `"${name}" is not a string` };
    } else if (Object.hasOwn(tool.flags, name)) {
      if (typeof value !== 'boolean') return { ok: false, problem: `"${name}" is not a boolean` };
    } else {
      return { ok: false, problem: `unknown argument "${name}"` };
    }
  }
  if (typeof args.target !== 'string') return { ok: false, problem: 'missing argument "target"' };
  const flags = Object.keys(tool.flags).filter((name) => args[name] === true);
  const local = typeof args.local === 'string' ? [args.local] : [];
  // Security: `--` ends the options, so a target or local path that starts with `-` is a
  // name, never a flag the caller did not set (a `local` of "--force" forces nothing).
  return { ok: true, argv: [...flags.map((name) => `--${name}`), '--', args.target, ...local] };
}
