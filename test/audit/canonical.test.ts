import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../broker/audit/index.js';
import { canonicalJsonPlusMember } from '../../broker/audit/canonical.js';

describe('canonicalJson', () => {
  it('sorts keys recursively and writes no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: true, y: null }], c: 'x y' } })).toBe(
      '{"a":{"c":"x y","d":[1,{"y":null,"z":true}]},"b":1}',
    );
  });

  it('escapes strings as JSON.stringify does', () => {
    expect(canonicalJson({ s: 'a"b\\c\n\u0000é' })).toBe('{"s":"a\\"b\\\\c\\n\\u0000é"}');
  });

  it('leaves out undefined object properties', () => {
    expect(canonicalJson({ a: undefined, b: 2 })).toBe('{"b":2}');
  });

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a bigint', 1n],
    ['a function', () => 1],
    ['a Date', new Date(0)],
    ['a Map', new Map()],
    ['undefined in an array', [undefined]],
    ['a symbol', Symbol('s')],
  ])('refuses %s instead of silently changing it', (_name, value) => {
    expect(() => canonicalJson({ v: value })).toThrow(TypeError);
  });

  it('refuses cycles', () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    expect(() => canonicalJson(a)).toThrow(/cyclic/);
  });

  it('property: key order does not matter and canonical form is a fixed point of parse', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const c = canonicalJson(v);
        expect(canonicalJson(JSON.parse(c))).toBe(c);
        expect(JSON.parse(c)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
    );
  });

  it('property: an object with shuffled keys has the same canonical form', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
        const reversed = Object.fromEntries(Object.entries(obj).reverse());
        expect(canonicalJson(reversed)).toBe(canonicalJson(obj));
      }),
    );
  });

  it('property: canonicalJsonPlusMember equals canonicalJson of the object with the member', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.string(),
        fc.string(),
        (obj, key, value) => {
          fc.pre(!Object.hasOwn(obj, key));
          const r = canonicalJsonPlusMember(obj, key, () => value);
          expect(r.without).toBe(canonicalJson(obj));
          const merged = JSON.parse(r.without) as Record<string, unknown>;
          Object.defineProperty(merged, key, {
            value,
            enumerable: true,
            writable: true,
            configurable: true,
          });
          expect(r.withMember).toBe(canonicalJson(merged));
        },
      ),
    );
  });

  it('canonicalJsonPlusMember refuses an existing member and non-plain objects', () => {
    expect(() => canonicalJsonPlusMember({ hash: 1 }, 'hash', () => 'x')).toThrow(TypeError);
    expect(() => canonicalJsonPlusMember(new Map() as never, 'hash', () => 'x')).toThrow(TypeError);
  });
});
