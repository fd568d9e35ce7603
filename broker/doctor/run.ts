/**
 * `broker doctor`: checks a configuration against the real world and reports a
 * checklist. Exit 0 when everything passes, 2 when something outside (a server, a
 * folder, the room) is wrong, 1 when the configuration itself does not load.
 *
 * Security: the report is scrubbed of every configured secret before it is returned,
 * and the only authenticated Nextcloud request per instance is sent once.
 */
import { ConfigError, configSecrets, loadConfig, type BrokerConfig } from '../config.js';
import type { PreflightClient } from '../approval/matrix/preflight.js';
import { createScrubber } from '../base/scrub.js';
import {
  type CheckSection,
  countFailures,
  fail,
  pass,
  renderChecklist,
  skip,
  warn,
} from './checklist.js';
import { checkAuditLog, checkDataDir, checkDataModes } from './local.js';
import { checkMatrix } from './matrix.js';
import { fetchPreflightClient } from './matrix-client.js';
import { checkEncryption } from './matrix-devices.js';
import { instanceSections } from './instance.js';
import { recordDoctorRequests } from './requests.js';
import type { NextcloudAnswer } from '../nextcloud/answers.js';

export interface DoctorDeps {
  env: NodeJS.ProcessEnv;
  /** Per network request. Default 10 s. */
  timeoutMs?: number;
  /** The Matrix client preflight runs on (default: fetch, see matrix-client.ts). */
  matrixClient?: (
    matrix: NonNullable<BrokerConfig['matrix']>,
    timeoutMs: number,
  ) => PreflightClient;
}

export interface DoctorReport {
  sections: CheckSection[];
  /** The checklist as printed (scrubbed). */
  text: string;
  exitCode: 0 | 1 | 2;
}

function configFailure(path: string, error: unknown): CheckSection {
  if (error instanceof ConfigError) {
    // Each issue's message already names the key, the problem and the fix.
    const other =
      error.code === 'missing' ? 'or pass --config FILE (or set $BROKER_CONFIG)' : undefined;
    return {
      title: `Configuration ${path}`,
      checks: error.issues.map((i) => fail(`${i.key}: ${i.message}`, other)),
    };
  }
  const detail = error instanceof Error ? error.name : 'unknown error';
  return {
    title: `Configuration ${path}`,
    checks: [
      fail(
        'the configuration could not be loaded',
        'check the file exists and is readable',
        detail,
      ),
    ],
  };
}

export async function runDoctor(configPath: string, deps: DoctorDeps): Promise<DoctorReport> {
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(configPath, deps.env);
  } catch (error) {
    const sections = [configFailure(configPath, error)];
    // ConfigError messages name keys and problems, never secret values.
    return { sections, text: renderChecklist(sections), exitCode: 1 };
  }
  const { config, warnings } = loaded;
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const sections: CheckSection[] = [
    {
      title: `Configuration ${configPath}`,
      checks: [pass('loads and validates'), ...warnings.map((w) => warn(w))],
    },
    {
      title: 'Local state',
      checks: [
        checkDataDir(config.data_dir),
        checkDataModes(config.data_dir),
        checkAuditLog(config.data_dir),
      ],
    },
  ];
  // Security: the doctor's own requests are recorded like the broker's (requests.ts).
  const answers = new Map<string, NextcloudAnswer[]>();
  const instances = await Promise.all(
    [...config.instances.values()].map((inst) => {
      const list: NextcloudAnswer[] = [];
      answers.set(inst.name, list);
      return instanceSections(inst, config, { timeoutMs, onAnswer: (a) => list.push(a) });
    }),
  );
  sections.push(...instances.flat());
  if (config.approval === 'matrix' && config.matrix !== undefined) {
    const client = (deps.matrixClient ?? fetchPreflightClient)(config.matrix, timeoutMs);
    sections.push({
      title: 'Matrix approval room',
      checks: await checkMatrix(config.matrix, client),
    });
    sections.push({
      title: 'Approval room encryption (matrix.encryption)',
      checks: await checkEncryption(config.matrix, client, config.data_dir),
    });
  } else {
    sections.push({
      title: 'Approval',
      checks: [
        skip(
          "approval: console: requests are approved on the broker's terminal (no Matrix checks)",
        ),
      ],
    });
  }
  sections.push({
    title: "The doctor's own requests",
    checks: [await recordDoctorRequests(config.data_dir, answers)],
  });
  const scrub = createScrubber(
    configSecrets(config),
    [...config.instances.values()].map((i) => [i.username, i.app_password] as const),
  );
  const text = scrub(renderChecklist(sections));
  return { sections, text, exitCode: countFailures(sections) === 0 ? 0 : 2 };
}
