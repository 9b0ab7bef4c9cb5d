import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import { csvRows, type Cell } from '../../../src/pipeline/csv-rows.js';
import { mulberry32 } from '../../helpers/random.js';

/**
 * The oracle: csv-stringify as the slices were written with before, except that it leaves a
 * carriage return without a line feed unquoted (with "\n" as the record delimiter), which
 * the table's CSV reader cannot read back; csvRows quotes it, as RFC 4180 asks.
 */
const oracle = (rows: Cell[][]) => (rows.length === 0 ? '' : stringify(rows, { record_delimiter: '\n', quoted_match: /\r/ }));

describe('csvRows', () => {
  it('writes what csv-stringify writes, for random rows of awkward cells', () => {
    const random = mulberry32(20261121);
    const pieces = ['a', 'b c', ',', '"', '""', '\n', '\r', '\r\n', ' ', '\t', 'é', '😀', '=1+1', "'", ';', '\\', '0', '-1'];
    const cell = (): Cell => {
      const r = random();
      if (r < 0.05) return null;
      if (r < 0.1) return undefined;
      if (r < 0.15) return '';
      let s = '';
      const n = 1 + Math.floor(random() * 5);
      for (let i = 0; i < n; i++) s += pieces[Math.floor(random() * pieces.length)];
      return s;
    };
    for (let k = 0; k < 300; k++) {
      const width = 1 + Math.floor(random() * 6);
      const rows = Array.from({ length: Math.floor(random() * 8) }, () => Array.from({ length: width }, cell));
      expect(csvRows(rows)).toBe(oracle(rows));
    }
  });

  it('quotes only what needs it, and writes empty and missing cells as empty fields', () => {
    expect(csvRows([['plain', 'a,b', 'say "hi"', 'two\nlines', 'cr\r', null, undefined, '']])).toBe('plain,"a,b","say ""hi""","two\nlines","cr\r",,,\n');
    expect(csvRows([['']])).toBe('\n');
    expect(csvRows([])).toBe('');
  });
});
