/**
 * The clock and random values of the reference's recordings, for the examples whose requests or
 * output depend on them (the reference left these five out of its own CI because it could not
 * replay them). Every example runs under a virtual clock that starts at `start` (DEFAULT_START
 * when not listed) and advances one second per answer of the mock API, and with a random source
 * that returns `random` (hex) first, then a stream seeded by the example's name. Each value is
 * read from the recording itself, as `from` says; nothing else about these examples is special.
 */
export interface Recording {
  /** The time of the recording's first request (ISO 8601, UTC). */
  start: string;
  /** The random bytes (hex) the recording's nonces show, in the order the extractor draws them. */
  random?: string;
  /** Where in the example the values are found. */
  from: string;
}

/** The clock of examples that do not depend on it. */
export const DEFAULT_START = '2017-09-07T12:00:00Z';

export const RECORDINGS: ReadonlyMap<string, Recording> = new Map([
  [
    '091-function-user-data',
    // users: currentDate = extractDate (currentStart); orders, one answer later: currentDate a second on.
    { start: '2017-04-20T15:53:50Z', from: '_sample_out: extractDate (time.currentStart) and currentDate (date() per job)' },
  ],
  [
    '102-oauth1',
    {
      start: '2017-04-22T23:40:52Z', // oauth_timestamp 1492904452
      random: '72469d96572dabb4d0ea02b057ea4f246d722b72', // oauth_nonce (20 bytes)
      from: 'users.requestHeaders: oauth_timestamp, oauth_nonce',
    },
  ],
  [
    '104-oauth2-hmac',
    {
      start: '2017-04-23T14:36:33Z', // ts 1492958193
      random: '605cce2a2f687253', // nonce (8 bytes)
      from: 'users.requestHeaders: ts, nonce',
    },
  ],
  ['109-incremental-load-from-to', { start: DEFAULT_START, from: 'users.request: to=2017-09-07 (date of time.currentStart)' }],
  ['110-incremental-relative', { start: DEFAULT_START, from: 'users.request: from=2017-09-06&to=2017-09-07 (currentStart -1 day, currentStart)' }],
]);
