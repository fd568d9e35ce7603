/**
 * The number Nextcloud gives each calendar and address book (its database id): activities
 * name a collection by it (`object_id`), and so do some error messages.
 */
import type { FakeCollection } from './collections.js';

const NUMBERS = new WeakMap<FakeCollection, number>();
let next = 1;

export function collectionNumber(collection: FakeCollection): number {
  let number = NUMBERS.get(collection);
  if (number === undefined) {
    number = next++;
    NUMBERS.set(collection, number);
  }
  return number;
}
