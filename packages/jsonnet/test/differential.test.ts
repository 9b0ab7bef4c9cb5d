/**
 * Differential test: random small programs evaluated by the Sluice compiler and by libjsonnet
 * (@hanazuki/node-jsonnet, in child processes: some inputs abort it); outputs, or the first line
 * of errors, must be identical.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { evaluateToString } from '../src/index.js';
import { LibjsonnetOracle } from '../src/engines.js';
import { mulberry32 as rng } from './random.js';

const libjsonnet = new LibjsonnetOracle();
afterAll(() => libjsonnet.close());

function generator(seed: number): () => string {
  const r = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const lit = (d: number): string => {
    const x = r();
    if (x < 0.25) return pick(['0', '1', '2', '-1', '0.5', '1e3', '3.25', '100', '7']);
    if (x < 0.45) return pick(["'a'", "'bc'", "''", "'x y'", "'é😀'", "'10'"]);
    if (x < 0.55) return pick(['true', 'false', 'null']);
    if (x < 0.7 && d > 0) return `[${Array.from({ length: Math.floor(r() * 4) }, () => expr(d - 1)).join(', ')}]`;
    if (d > 0) {
      const names = ['a', 'b', 'c', 'd'].filter(() => r() < 0.5);
      return `{${names.map((n) => `${n}${pick([':', '::', ':::', '+:'])} ${expr(d - 1)}`).join(', ')}}`;
    }
    return '1';
  };
  const fns = [
    'std.length', 'std.type', 'std.toString', 'std.reverse', 'std.sort', 'std.uniq', 'std.isString', 'std.abs', 'std.sign',
    'std.objectFields', 'std.set', 'std.flattenArrays', 'std.stringChars', 'std.asciiUpper', 'std.prune', 'std.base64',
    'std.md5', 'std.manifestJsonMinified', 'std.escapeStringJson', 'std.floor', 'std.objectValues', 'std.sum',
  ];
  const expr = (d: number): string => {
    if (d <= 0) return lit(0);
    const x = r();
    if (x < 0.3) return lit(d);
    if (x < 0.5) {
      const op = pick(['+', '-', '*', '/', '%', '==', '!=', '<', '<=', '&&', '||', '&', '|', '^', '<<', 'in']);
      return `(${expr(d - 1)} ${op} ${expr(d - 1)})`;
    }
    if (x < 0.6) return `(if ${expr(d - 1)} then ${expr(d - 1)} else ${expr(d - 1)})`;
    if (x < 0.7) return `(local v = ${expr(d - 1)}; [v, ${expr(d - 1)}])`;
    if (x < 0.8) return `${pick(fns)}(${expr(d - 1)})`;
    if (x < 0.85) return `std.format(${pick(["'%s'", "'%d|%5.2f'", "'%(a)s'", "'%x %c'"])}, ${expr(d - 1)})`;
    if (x < 0.9) return `[x for x in ${expr(d - 1)}]`;
    if (x < 0.95) return `{[std.toString(k)]: k for k in ${expr(d - 1)}}`;
    return `(${expr(d - 1)})[${pick(['0', '1', "'a'", '-1', '0:1', '::2'])}]`;
  };
  return () => expr(1 + Math.floor(r() * 4));
}

const firstLine = (s: string): string => (/^(RUNTIME|STATIC) ERROR/.test(s) ? s.split('\n')[0] : s);

async function oracle(code: string): Promise<string> {
  try {
    return await libjsonnet.evaluate(code, { filename: 'snippet' });
  } catch (e) {
    return (e as Error).message;
  }
}
function mine(code: string): string {
  try {
    return evaluateToString(code, { filename: 'snippet' });
  } catch (e) {
    return (e as Error).message;
  }
}

describe('jsonnet differential (generated programs)', () => {
  it('agrees with libjsonnet on 200 random programs', async () => {
    const next = generator(Number(process.env.JSONNET_DIFF_SEED ?? 20261121));
    const programs = Array.from({ length: 200 }, next);
    const expected = await Promise.all(programs.map(oracle));
    let errors = 0;
    for (let i = 0; i < programs.length; i++) {
      if (expected[i].startsWith('RUNTIME ERROR') || expected[i].startsWith('STATIC ERROR')) errors++;
      expect([programs[i], firstLine(mine(programs[i]))]).toEqual([programs[i], firstLine(expected[i])]);
    }
    // The generator must produce both successes and failures to be useful.
    expect(errors).toBeGreaterThan(10);
    expect(errors).toBeLessThan(190);
  });
});
