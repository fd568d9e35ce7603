/**
 * What the demo prints once it is up: where the agent connects, with which token, how
 * to point the `broker` CLI at it, and how to approve. Pure text builders.
 */
import { DEMO_INSTANCE } from './config.js';

export const MCP_SERVER_NAME = 'nextcloud-broker';

export interface BannerInput {
  /** The broker's base URL, e.g. http://127.0.0.1:8765. */
  brokerUrl: string;
  agentToken: string;
  transferToken: string;
  /** Set when the usual port was taken and another one is used. */
  preferredPortBusy?: number;
  cloudUrl: string;
  cloudUser: string;
  /** Shown as given (relative to where the demo was started). */
  cloudFolder: string;
  /** The demo cloud's trash bin (kept across restarts). */
  trashFolder: string;
  /** Where the demo's secret files are (the config names them). */
  secretsFolder: string;
  /** The file holding the bearer token of GET /metrics. */
  metricsTokenFile: string;
  dataFolder: string;
  tokensFile: string;
  configFile: string;
  /** Example files created on this start (empty when they already existed). */
  seeded: readonly string[];
  /** A calendar `personal` and an address book `contacts` were seeded. */
  groupware?: boolean;
  /** stdin is not a terminal: approvals go through the owner socket only. */
  headless?: boolean;
}

/** `mcpServers` JSON as Claude Code (.mcp.json) and similar clients read it. */
export function mcpClientConfig(mcpUrl: string, agentToken: string): string {
  return JSON.stringify(
    {
      mcpServers: {
        [MCP_SERVER_NAME]: {
          type: 'http',
          url: mcpUrl,
          headers: { Authorization: `Bearer ${agentToken}` },
        },
      },
    },
    null,
    2,
  );
}

export function claudeMcpAddLine(mcpUrl: string, agentToken: string): string {
  return `claude mcp add --transport http ${MCP_SERVER_NAME} ${mcpUrl} --header "Authorization: Bearer ${agentToken}"`;
}

/** The lines of tokens.env (also printed): what the `broker` CLI reads. */
export function cliEnvLines(brokerUrl: string, transferToken: string): string[] {
  return [`export BROKER_URL=${brokerUrl}`, `export BROKER_TRANSFER_TOKEN=${transferToken}`];
}

export function tokensEnvFile(brokerUrl: string, transferToken: string): string {
  return [
    '# Written by the broker demo; valid until the demo stops (new tokens on every start).',
    '# Use: source this file, then run `npx broker fetch demo:Documents/welcome.md`.',
    ...cliEnvLines(brokerUrl, transferToken),
    '',
  ].join('\n');
}

export function renderBanner(b: BannerInput): string {
  const mcpUrl = `${b.brokerUrl}/mcp`;
  const rule = '─'.repeat(72);
  const lines = [
    rule,
    'Nextcloud Access Broker: DEMO (no config.yaml found, so nothing real is touched)',
    rule,
    '',
    `Demo Nextcloud   ${b.cloudUrl} (user ${b.cloudUser}), files in ${b.cloudFolder}`,
    ...(b.seeded.length > 0
      ? [`                 example files created: ${b.seeded.join(', ')}`]
      : []),
    ...(b.groupware === true
      ? [
          '                 and a calendar "personal" and an address book "contacts": ask for',
          '                 them with request_access items of kind "calendar" / "contacts"',
        ]
      : []),
    `Trash bin        ${b.trashFolder}: what the agent trashes stays there across restarts;`,
    `                 to restore, stop the demo and move it from files/ back into ${b.cloudFolder}`,
    `Broker state     ${b.dataFolder} (grant database, audit log; config ${b.configFile},`,
    `                 secrets in ${b.secretsFolder}, mode 0600, new on every start)`,
    `                 check it: npx broker doctor --config ${b.configFile}`,
    ...(b.preferredPortBusy === undefined
      ? []
      : [
          `Port             ${b.preferredPortBusy} is busy, so the broker uses ${new URL(b.brokerUrl).port}`,
        ]),
    '',
    'For the AI agent (MCP, Streamable HTTP):',
    `  MCP URL       ${mcpUrl}`,
    `  Agent token   ${b.agentToken}`,
    '',
    '  Claude Code:',
    `    ${claudeMcpAddLine(mcpUrl, b.agentToken)}`,
    '',
    '  Or paste into an MCP client config (mcpServers, e.g. .mcp.json):',
    ...mcpClientConfig(mcpUrl, b.agentToken)
      .split('\n')
      .map((l) => `    ${l}`),
    '',
    'For the `broker` CLI (moves file content; keep this token away from the model),',
    'in another terminal:',
    ...cliEnvLines(b.brokerUrl, b.transferToken).map((l) => `  ${l}`),
    `  (or: source ${b.tokensFile}, written with mode 0600)`,
    `  npx broker fetch ${DEMO_INSTANCE}:Documents/welcome.md`,
    '',
    'Metrics (Prometheus; what each counts: docs/contracts.md, section 9), with their own token:',
    `  curl -s -H "Authorization: Bearer $(cat ${b.metricsTokenFile})" ${b.brokerUrl}/metrics | head`,
    '',
    'Tokens are new on every start: paste them again after a restart.',
    '',
    ...(b.headless === true
      ? [
          'stdin is not a terminal, so this demo runs headless: the agent asks with',
          'request_access, the request appears below with its number N, and you decide',
          'from another shell in this folder:',
        ]
      : [
          'Approve here. The agent asks with request_access; the request appears below with',
          'its number N. Type:',
          '  approve N   approve N 1,2 2h   deny N   show N   deny all   revoke N   revoke all',
          '  status   help   quit',
          'Or from another shell in this folder:',
        ]),
    '  npx broker approve N   npx broker deny N   npx broker revoke N|all',
    '  npx broker grants   npx broker status   npx broker audit tail -n 20',
    'Stop with Ctrl-C.',
    rule,
    '',
  ];
  return lines.join('\n');
}
