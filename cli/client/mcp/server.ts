/**
 * `broker mcp`: the client commands as an MCP server on stdio, for an agent whose MCP
 * client starts it (docs/clients.md). Each tool call runs the command's own body
 * (cli/client/transfer/run.ts) and answers its JSON object and exit code as the tool result.
 *
 * The protocol as a tools-only server speaks it: newline-delimited JSON-RPC 2.0 on
 * stdin/stdout; `initialize` (version negotiation), `ping`, `tools/list`, `tools/call`
 * and, to the client, `notifications/progress`. Notifications from the client
 * (`initialized`, `cancelled`) need nothing: a started transfer runs to its end, since
 * stopping it halfway would only leave a lock or a half-recorded copy behind.
 *
 * Why not the SDK's McpServer: measured, it grew the agent's file from 69 KB to 1.56 MB
 * (the SDK, zod, ajv) and added ~0.1 s of CPU to every `broker fetch` although loaded
 * only for this command (node parses the whole file), the start-up the client commands
 * are kept small for (cli/client/transfer/mcp-http.ts). The SDK's own client drives this server
 * in test/cli/client/mcp-stdio.test.ts.
 */
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { CodedError } from '../../../broker/base/coded-error.js';
import { errorLine } from '../../../broker/base/errors.js';
import { BROKER_VERSION } from '../../../broker/base/version.js';
import { ExitCode } from '../../command.js';
import { isObject } from '../transfer/json.js';
import { jsonLine } from '../../terminal.js';
import { settleClientTransfer } from '../transfer/run.js';
import { confineLocal } from './area.js';
import { progressNotifier, type ProgressSink } from './progress.js';
import { commandArgs, toolListing, TRANSFER_TOOLS } from './tools.js';
import type { JsonObject } from '../../../broker/base/protocol.js';

/** Newest first: the first is answered to a client asking for one not listed. */
const SUPPORTED_VERSIONS: readonly string[] = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
];
/** A message longer than this is not one of ours to read (a tool call is a few hundred bytes). */
const MAX_MESSAGE_CHARS = 1024 * 1024;

const INSTRUCTIONS =
  'File transfers through the Nextcloud Access Broker: fetch and checkout stage a remote file ' +
  'on this host, push and checkin upload one; each answers the local path, size, sha256 and ' +
  'etag, never the content (read the local file). A refusal (exit_code 3) needs a grant: ask ' +
  "for one with the broker's request_access tool.";

/** JSON-RPC's error numbers, by the name this server throws them under. */
const RPC_NUMBERS = {
  parse_error: -32700,
  invalid_request: -32600,
  method_not_found: -32601,
  invalid_params: -32602,
  internal_error: -32603,
} as const;

type RpcErrorCode = keyof typeof RPC_NUMBERS;

class RpcError extends CodedError<RpcErrorCode> {
  override readonly name = 'RpcError';

  /** The JSON-RPC `error` member: the only place a code becomes JSON-RPC's number. */
  toJson(): { code: number; message: string } {
    return { code: RPC_NUMBERS[this.code], message: this.message };
  }
}

export interface McpServeOptions {
  readonly env: NodeJS.ProcessEnv;
  /** The client's messages, one JSON object a line. */
  readonly input: Readable;
  /** Sends one line to the client (the protocol channel: nothing else is written there). */
  readonly send: (line: string) => void;
  /** Where the commands' human text goes (notes, failures): never the protocol channel. */
  readonly stderr: (text: string) => void;
}

/** A command's answer as a tool result: its JSON line as text, the object as structured content. */
export function toolResult(answer: JsonObject, exitCode: number) {
  const structured = { ...answer, exit_code: exitCode };
  return {
    content: [{ type: 'text', text: jsonLine(structured).trimEnd() }],
    structuredContent: structured,
    ...(exitCode !== ExitCode.ok ? { isError: true } : {}),
  };
}

function initialize(params: JsonObject): JsonObject {
  const asked = params.protocolVersion;
  return {
    protocolVersion:
      typeof asked === 'string' && SUPPORTED_VERSIONS.includes(asked)
        ? asked
        : SUPPORTED_VERSIONS[0],
    capabilities: { tools: {} },
    serverInfo: {
      name: 'broker',
      title: 'Nextcloud Access Broker transfers',
      version: BROKER_VERSION,
    },
    instructions: INSTRUCTIONS,
  };
}

async function callTool(
  params: JsonObject,
  notify: (message: JsonObject) => void,
  opts: McpServeOptions,
): Promise<JsonObject> {
  const tool = TRANSFER_TOOLS.find((t) => t.transfer.name === params.name);
  if (tool === undefined) {
    throw new RpcError('invalid_params', `unknown tool ${JSON.stringify(params.name)}`);
  }
  const args = commandArgs(tool, params.arguments);
  if (!args.ok) {
    // A tool execution error (not a protocol one), so the model sees it and can correct it.
    return toolResult(
      {
        status: 'failed',
        error: `${args.problem} for the ${tool.transfer.name} tool`,
        next_step:
          'call it with "target" (INSTANCE:PATH) and the optional arguments tools/list shows',
      },
      ExitCode.usage,
    );
  }
  const meta = params._meta;
  const token = isObject(meta) ? meta.progressToken : undefined;
  const sink: ProgressSink | undefined =
    typeof token === 'string' || typeof token === 'number'
      ? (progress, total, message) =>
          notify({
            method: 'notifications/progress',
            params: {
              progressToken: token,
              progress,
              ...(total !== null ? { total } : {}),
              message,
            },
          })
      : undefined;
  const cwd = process.cwd();
  const { answer, exitCode } = await settleClientTransfer(
    tool.transfer,
    args.argv,
    opts.stderr,
    opts.env,
    progressNotifier(sink),
    // Security: the agent has no shell here: a local path must resolve inside its
    // working folder or the staging folder (area.ts).
    (local, stageRoot) => confineLocal(local, [cwd, stageRoot]),
  );
  return toolResult(answer, exitCode);
}

/** The answer to one request, or an RpcError. */
function answer(
  method: string,
  params: JsonObject,
  notify: (message: JsonObject) => void,
  opts: McpServeOptions,
): Promise<JsonObject> {
  switch (method) {
    case 'initialize':
      return Promise.resolve(initialize(params));
    case 'ping':
      return Promise.resolve({});
    case 'tools/list':
      return Promise.resolve({ tools: TRANSFER_TOOLS.map(toolListing) });
    case 'tools/call':
      return callTool(params, notify, opts);
    default:
      return Promise.reject(new RpcError('method_not_found', `method not found: ${method}`));
  }
}

/**
 * Serves until the input ends and every call in progress has answered; resolves with
 * the exit code.
 */
export async function serveMcp(opts: McpServeOptions): Promise<number> {
  const write = (message: JsonObject): void =>
    opts.send(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  const inFlight = new Set<Promise<void>>();

  const onMessage = async (line: string): Promise<void> => {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      write({ id: null, error: new RpcError('parse_error', 'not JSON').toJson() });
      return;
    }
    if (!isObject(message) || message.jsonrpc !== '2.0') {
      write({
        id: null,
        error: new RpcError('invalid_request', 'not a JSON-RPC 2.0 message').toJson(),
      });
      return;
    }
    // A response (this server asks nothing) or a notification: nothing to answer.
    if (typeof message.method !== 'string' || !('id' in message)) return;
    const { id } = message;
    if (typeof id !== 'string' && typeof id !== 'number') {
      write({
        id: null,
        error: new RpcError('invalid_request', 'a request id is a string or a number').toJson(),
      });
      return;
    }
    const params = isObject(message.params) ? message.params : {};
    try {
      write({ id, result: await answer(message.method, params, write, opts) });
    } catch (err) {
      // Security: an unexpected error's own text stays on stderr, for the person; the
      // client (the agent) gets a generic message.
      if (!(err instanceof RpcError))
        opts.stderr(`broker mcp: internal error: ${errorLine(err)}\n`);
      write({
        id,
        error: (err instanceof RpcError
          ? err
          : new RpcError('internal_error', 'internal error in broker mcp; see its stderr')
        ).toJson(),
      });
    }
  };

  const decoder = new StringDecoder('utf8');
  let buffered = '';
  // Past MAX_MESSAGE_CHARS without a newline: the rest of that line is dropped.
  let skipping = false;
  const onLine = (line: string): void => {
    const trimmed = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (trimmed.trim() === '') return;
    const handled = onMessage(trimmed).finally(() => inFlight.delete(handled));
    inFlight.add(handled);
  };
  const onText = (text: string): void => {
    const lines = (buffered + text).split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      if (skipping) skipping = false;
      else onLine(line);
    }
    if (buffered.length > MAX_MESSAGE_CHARS) {
      // Security: a client cannot make this process hold an unbounded line in memory.
      if (!skipping)
        write({ id: null, error: new RpcError('parse_error', 'message too long').toJson() });
      skipping = true;
      buffered = '';
    }
  };

  await new Promise<void>((resolve) => {
    opts.input.on('data', (chunk: Buffer) => onText(decoder.write(chunk)));
    opts.input.once('end', resolve);
    opts.input.once('close', resolve);
    opts.input.once('error', resolve);
  });
  onText(`${decoder.end()}\n`);
  while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
  return ExitCode.ok;
}
