/**
 * Argument schemas shared by the tools. They bound sizes and types only: every path is
 * judged by the wall (canonicalPath), never repaired or pre-filtered here.
 */
import { z } from 'zod';

export const InstanceName = z
  .string()
  .min(1)
  .max(64)
  .describe('an instance name from list_instances');

export const PathArg = z
  .string()
  .min(1)
  .max(4096)
  .describe(
    'a path relative to the instance root, e.g. "Documents/report.odt" (no "..", no trailing "/")',
  );

export const ModeArg = z.enum(['read', 'write']).describe('"write" includes read');

export const Timestamp = z.string().describe('ISO-8601 UTC');

/** ms since the epoch → ISO-8601 UTC. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
