/**
 * cappedFields(): whatever third parties write, what reaches the agent is bounded, and
 * every cut is counted (so the warning never says less than was left out).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cappedFields,
  MAX_THIRD_PARTY_LINE,
  MAX_THIRD_PARTY_TEXT,
  MAX_THIRD_PARTY_VALUES,
} from '../../broker/surfaces/third-party-text.js';

interface Card {
  name: string | null;
  emails: string[];
  note?: string | null;
}
const FIELDS = { long: 'note', short: ['name'], lists: ['emails'] } as const;
const chars = (text: string | null | undefined): number => [...(text ?? '')].length;
const text = fc.string({ unit: 'binary', maxLength: 2500 });

describe('property: third-party text is capped whatever its length', () => {
  it('every short text, list and long text is within its cap; each cut is counted once', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            name: fc.option(text),
            emails: fc.array(fc.string({ unit: 'binary', maxLength: 300 }), { maxLength: 30 }),
            note: fc.option(text),
          }),
          { maxLength: 5 },
        ),
        fc.boolean(),
        (items: Card[], include) => {
          const line = include ? MAX_THIRD_PARTY_TEXT : MAX_THIRD_PARTY_LINE;
          const { shown, cuts } = cappedFields(items, FIELDS, include);
          let texts = 0;
          let lists = 0;
          shown.forEach((card, i) => {
            const was = items[i] as Card;
            expect(chars(card.name)).toBeLessThanOrEqual(line + 1);
            expect(chars(card.note)).toBeLessThanOrEqual(MAX_THIRD_PARTY_TEXT + 1);
            expect(card.emails.length).toBeLessThanOrEqual(MAX_THIRD_PARTY_VALUES);
            for (const e of card.emails) expect(chars(e)).toBeLessThanOrEqual(line + 1);
            if (chars(was.name) > line) texts += 1;
            if (chars(was.note) > MAX_THIRD_PARTY_TEXT) texts += 1;
            if (was.emails.length > MAX_THIRD_PARTY_VALUES) lists += 1;
            for (const e of was.emails.slice(0, MAX_THIRD_PARTY_VALUES))
              if (chars(e) > line) texts += 1;
          });
          expect(cuts).toEqual({ texts, lists });
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a text within its cap is returned exactly as written', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: MAX_THIRD_PARTY_LINE }), (name) => {
        const card: Card = { name, emails: [name] };
        const { shown, cuts } = cappedFields([card], FIELDS, false);
        expect(shown).toEqual([{ name, emails: [name] }]);
        expect(cuts).toEqual({ texts: 0, lists: 0 });
      }),
    );
  });
});
