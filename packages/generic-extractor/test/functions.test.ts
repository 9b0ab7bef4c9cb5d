import { describe, expect, it } from 'vitest';
import { evaluate, flattenContext, phpDate, phpSprintf, phpStrtotime } from '../src/config/functions.js';
import { Mapper } from '../src/output/mapper.js';
import { resolvePlaceholders } from '../src/child-jobs/children.js';

describe('generic extractor: user functions', () => {
  const ctx = { attr: flattenContext({ user: 'JohnDoe', '#password': 'TopSecret', server: { host: 'h', port: 80 }, columns: '' }), time: { previousStart: 1492606006 } };

  it('evaluates nested functions and context references', () => {
    expect(evaluate({ function: 'base64_encode', args: [{ function: 'concat', args: [{ attr: 'user' }, ':', { attr: '#password' }] }] }, ctx)).toBe('Sm9obkRvZTpUb3BTZWNyZXQ=');
    expect(evaluate({ function: 'concat', args: [{ attr: 'server.host' }, ':', { attr: 'server.port' }] }, ctx)).toBe('h:80');
    expect(evaluate({ filter: { name: { attr: 'user' }, plain: 1 } }, ctx)).toEqual({ filter: { name: 'JohnDoe', plain: 1 } });
    expect(evaluate({ function: 'md5', args: ['NotSoSecret'] }, ctx)).toBe('1228d3ff5089f27721f1e0403ad86e73');
    expect(evaluate({ function: 'hash_hmac', args: ['sha256', 'data', 'key'] }, ctx)).toBe('5031fe3d989c6d1537a013fa6e739da23463fdaec3b70137d828e36ace221bd0');
    expect(evaluate({ function: 'ifempty', args: [{ attr: 'columns' }, 'all'] }, ctx)).toBe('all');
    expect(evaluate({ function: 'implode', args: [',', ['a', 'b']] }, ctx)).toBe('a,b');
    expect(evaluate({ time: 'previousStart' }, ctx)).toBe(1492606006);
  });

  it('explains bad functions and missing references', () => {
    expect(() => evaluate({ function: 'exec', args: ['ls'] }, ctx)).toThrow(/Illegal function 'exec'/);
    expect(() => evaluate({ attr: 'missing' }, ctx)).toThrow(/attr 'missing' not found/);
  });

  it('formats dates and parses relative times in UTC like PHP', () => {
    expect(phpDate('Y-m-d H:i:s', 1492606006)).toBe('2017-04-19 12:46:46');
    expect(phpDate('Y-m-d H:i:s:u', 1492674974)).toBe('2017-04-20 07:56:14:000000');
    expect(phpDate('Y-m-d', phpStrtotime('+7 days', phpStrtotime('2017-10-04', 0) as number) as number)).toBe('2017-10-11');
    expect(phpStrtotime('-1 day', 86400 * 3)).toBe(86400 * 2);
    expect(phpStrtotime('gibberish', 0)).toBe(false);
  });

  it('formats like PHP sprintf', () => {
    expect(phpSprintf("%'.05d", [3])).toBe('00003');
    expect(phpSprintf('%s-%04.1f|%-4s|%x', ['a', 3.14159, 'b', 255])).toBe('a-03.1|b   |ff');
    expect(phpSprintf('http://%s/x/', ['mock:80'])).toBe('http://mock:80/x/');
  });

  it('applies placeholder functions to the parent value', () => {
    const sets = resolvePlaceholders({ id: { path: 'id', function: 'sprintf', args: ["%'.05d", { placeholder: 'value' }] } }, [{ id: 3 }]);
    expect(sets[0][0]).toMatchObject({ placeholder: 'id', field: 'id', value: '00003' });
    expect(resolvePlaceholders({ id: 'ids' }, [{ ids: [1, 2] }]).map((s) => s[0].value)).toEqual([1, 2]);
    expect(() => resolvePlaceholders({ id: 'nope' }, [{ id: 1 }])).toThrow(/No value found for id in parent result/);
  });
});

describe('generic extractor: mappings', () => {
  it('maps columns, user values and child tables linked by the primary key', () => {
    const m = new Mapper(
      {
        id: { mapping: { destination: 'id', primaryKey: true } },
        name: 'name',
        tag: { type: 'user', mapping: { destination: 'tag' } },
        addresses: { type: 'table', destination: 'address', parentKey: { destination: 'userId', primaryKey: true }, tableMapping: { street: 'street' } },
      },
      'users',
    );
    m.parse([{ id: 1, name: 'Ann', addresses: [{ street: 'A' }, { street: 'B' }] }], { tag: 'dev' });
    const [users, address] = m.tables();
    expect(users).toEqual({ name: 'users', header: ['id', 'name', 'tag'], rows: [[1, 'Ann', 'dev']], primaryKey: ['id'] });
    expect(address).toEqual({ name: 'address', header: ['street', 'userId'], rows: [['A', '1'], ['B', '1']], primaryKey: ['userId'] });
  });

  it('links by md5 without a primary key, forceType keeps JSON, and rejects non-scalars otherwise', () => {
    const m = new Mapper({ id: 'id', tags: { type: 'column', mapping: { destination: 'tags' }, forceType: true }, list: { type: 'table', destination: 'list', tableMapping: { '.': 'v' } } }, 'users');
    m.parse([{ id: 1, tags: ['a'], list: ['x'] }]);
    const [users, list] = m.tables();
    expect(users.header).toEqual(['id', 'tags', 'list']);
    expect(users.rows[0][1]).toBe('["a"]');
    expect(list.rows[0]).toEqual(['x', users.rows[0][2]]);
    expect(list.header).toEqual(['v', 'users_pk']);
    const bad = new Mapper({ tags: 'tags' }, 't');
    expect(() => bad.parse([{ tags: ['a'] }])).toThrow(/not scalar/);
  });
});
