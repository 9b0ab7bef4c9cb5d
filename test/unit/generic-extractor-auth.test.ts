import { describe, expect, it } from 'vitest';
import { mergeLoginQuery } from '../../src/components/generic-extractor/auth.js';

describe('generic extractor: login authentication query merge', () => {
  it('puts login parameters after the request-only ones, in their configured order (example 081)', () => {
    const url = 'http://h/users?debug=1&orderBy=userName&secretKey=none&customerId=234';
    expect(mergeLoginQuery(url, { apiToken: '987654', secretKey: 'a1b2c3d435f6', customerId: 'abc' })).toBe(
      'http://h/users?debug=1&orderBy=userName&apiToken=987654&secretKey%5B0%5D=none&secretKey%5B1%5D=a1b2c3d435f6&customerId%5B0%5D=234&customerId%5B1%5D=abc',
    );
  });

  it('appends new parameters and keeps the URL as is otherwise', () => {
    expect(mergeLoginQuery('http://h/users', { token: 't 1' })).toBe('http://h/users?token=t+1');
    expect(mergeLoginQuery('http://h/users?a=1#frag', { b: 2, c: true })).toBe('http://h/users?a=1&b=2&c=1#frag');
    // The login order decides, not the request's.
    expect(mergeLoginQuery('http://h/u?b=1&a=2&z=0', { a: 'x', b: 'y' })).toBe('http://h/u?z=0&a%5B0%5D=2&a%5B1%5D=x&b%5B0%5D=1&b%5B1%5D=y');
  });
});
