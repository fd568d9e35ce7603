import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import type { ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';
import { envelopeSchema } from '../schemas.js';

export const ListInstancesInputSchema = z.strictObject({});

export const ListInstancesOutputSchema = envelopeSchema({
  instances: z.array(z.strictObject({ name: z.string(), discovery: z.boolean() })).optional(),
});

export function registerListInstances(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'list_instances',
    title: 'List instances',
    description:
      'The Nextcloud instances you can request access to, by name. "discovery": true means you may list ' +
      'folder names there without a grant.',
    input: ListInstancesInputSchema,
    output: ListInstancesOutputSchema,
    annotations: {
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    handler: () => {
      // Security: names and discovery flags only; URLs, users and passwords never leave the config.
      const instances = [...deps.instances].map(([name, policy]) => ({
        name,
        discovery: policy.discovery,
      }));
      return Promise.resolve(
        ok(
          instances.length === 0
            ? 'no instances are configured; ask the owner'
            : `${instances.length} instance${instances.length === 1 ? '' : 's'}; call request_access to get access`,
          { instances },
        ),
      );
    },
  });
}
