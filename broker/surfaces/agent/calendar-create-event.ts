import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { parseZonedInstant } from '../../base/instant.js';
import { CONTROL_EXCEPT_LF, HIDDEN_IN_TEXT } from '../../base/text.js';
import { answer } from '../answer.js';
import { InstanceNameSchema, envelopeSchema } from '../schemas.js';
import { ADDING_TOOL, type ToolRegistry } from '../tool.js';
import { CollectionNameSchema, EventOutSchema, ZonedTimeSchema } from './calendar-events.js';
import type { AgentToolDeps } from './deps.js';

// Security: the title and location are shown in the owner's calendar; characters that
// hide or reorder text are refused (line breaks too: a title is one line).
const OneLine = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => !HIDDEN_IN_TEXT.test(s) && !/[\n\r]/.test(s), {
      message: 'plain text on one line (no control, zero-width or bidi characters)',
    });

export const CalendarCreateEventInputSchema = z
  .strictObject({
    instance: InstanceNameSchema,
    calendar: CollectionNameSchema,
    title: OneLine(255).refine((s) => s.trim() !== '', { message: 'a title is needed' }),
    start: ZonedTimeSchema.describe('ISO 8601 with a zone'),
    end: ZonedTimeSchema.describe('ISO 8601 with a zone, after start'),
    location: OneLine(255).optional(),
    description: z
      .string()
      .max(4000)
      .refine((s) => !CONTROL_EXCEPT_LF.test(s.replace(/\r\n/g, '\n')), {
        message: 'no control characters',
      })
      .optional(),
  })
  .refine(
    (a) => {
      const start = parseZonedInstant(a.start);
      const end = parseZonedInstant(a.end);
      // Only between two real instants: a time that does not parse has its own message.
      return start === undefined || end === undefined || end > start;
    },
    { message: 'end must be after start', path: ['end'] },
  );

export const CalendarCreateEventOutputSchema = envelopeSchema({
  calendar: z.string().optional(),
  event: EventOutSchema.optional(),
});

export function registerCalendarCreateEvent(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'calendar_create_event',
    title: 'Create a calendar event',
    description:
      'Create one new event in a calendar you hold a write grant on (write on a calendar means create, ' +
      'never change or delete). Times with zones; the answer is the event as Nextcloud stored it. ' +
      'No attendees are added, so nobody is invited. Not idempotent: calling twice makes two events.',
    input: CalendarCreateEventInputSchema,
    output: CalendarCreateEventOutputSchema,
    annotations: ADDING_TOOL,
    handler: async (args, ctx) =>
      answer(
        await deps.collections.createEvent(ctx, {
          instance: args.instance,
          calendar: args.calendar,
          event: {
            title: args.title,
            start: parseZonedInstant(args.start) as number,
            end: parseZonedInstant(args.end) as number,
            location: args.location,
            description: args.description,
          },
        }),
        ({ calendar, created }) =>
          ok(
            `event "${created.event.title ?? ''}" created in calendar "${calendar}" (${created.event.start ?? '?'} to ${created.event.end ?? '?'} UTC)`,
            {
              calendar,
              event: created.event,
              ...(created.changed.length > 0
                ? {
                    warnings: [
                      `Nextcloud stored ${created.changed.join(', ')} differently from what was sent: the event above is what it stored`,
                    ],
                  }
                : {}),
            },
          ),
      ),
  });
}
