/**
 * fast-check arbitraries for hostile API requests, driven by the served OpenAPI document: each
 * operation's path, query parameters and request body schema give a request that is nearly
 * valid, and a mix of random and hostile values makes it invalid in every way a client can.
 *
 * Written here rather than taken from a package: the JSON Schema generators for fast-check on
 * npm are unmaintained or generate only valid values, and the part needed (the subset of JSON
 * Schema the route schemas use: object, array, string, number, integer, boolean, enum, oneOf,
 * anyOf) is short. fast-check itself brings the random values, the seeds and the shrinking.
 */
import fc from 'fast-check';

export interface Operation {
  method: string;
  path: string;
  queryNames: string[];
  /** The JSON body's schema, when the operation declares one. */
  bodySchema?: JsonSchema;
}

export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
}

/** Every operation of the document, HEAD and the console's static files left out. */
export function operationsOf(doc: { paths: Record<string, Record<string, any>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (method === 'head' || path.startsWith('/console')) continue;
      const queryNames = ((op.parameters ?? []) as { in: string; name: string }[]).filter((p) => p.in === 'query').map((p) => p.name);
      const bodySchema = op.requestBody?.content?.['application/json']?.schema as JsonSchema | undefined;
      ops.push({ method: method.toUpperCase(), path, queryNames, bodySchema });
    }
  }
  return ops;
}

/** Strings a parser, a path or a database may trip on. */
export const hostileStrings: readonly string[] = [
  '', ' ', '0', '-1', '1e999', 'NaN', 'null', 'true', '[]', '{}', '__proto__', 'constructor', 'prototype',
  '../../../../etc/passwd', '..%2f..%2fetc%2fpasswd', '%00', '\u0000', '\ud800', '😀', 'é'.repeat(300),
  "'; DROP TABLE x; --", '" OR 1=1 --', '${jndi:ldap://x}', '{{constructor.constructor("return process")()}}',
  '<script>alert(1)</script>', 'KBC::ProjectSecure::AAAA', 'in.c-x.y', 'in.c-', '_timestamp', 'a'.repeat(5000),
];

export const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...hostileStrings) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
);

const hostileNumber = fc.oneof(
  fc.constantFrom(0, -0, -1, 1e308, -1e308, 2 ** 53 + 1, 0.1, Number.MAX_SAFE_INTEGER),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

/** Any JSON value, including long strings and deep but parseable nesting. */
export const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 5 }),
  ),
})).value;

/**
 * Values of a schema: mostly of the declared type (so the request gets past the first check and
 * reaches the handler), sometimes anything at all.
 */
export function fromSchema(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return anyJson;
  const alternatives = schema.oneOf ?? schema.anyOf;
  const typed = (() => {
    if (schema.enum) return fc.constantFrom(...schema.enum);
    if (alternatives) return fc.oneof(...alternatives.map((s) => fromSchema(s, depth + 1)));
    const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
    switch (type) {
      case 'object': {
        const props = schema.properties ?? {};
        const required = new Set(schema.required ?? []);
        const shape: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [k, s] of Object.entries(props)) shape[k] = fromSchema(s, depth + 1);
        return fc.tuple(
          fc.record(shape, { requiredKeys: Object.keys(props).filter((k) => required.has(k)) }),
          fc.dictionary(hostileString, anyJson, { maxKeys: 2 }),
          fc.boolean(),
        ).map(([known, extra, addExtra]) => (addExtra ? { ...extra, ...known } : known));
      }
      case 'array':
        return fc.array(fromSchema(schema.items, depth + 1), { maxLength: 4 });
      case 'string':
        return fc.oneof(fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 30, 60) }), hostileString);
      case 'integer':
        return fc.oneof(fc.integer({ min: schema.minimum ?? -10, max: schema.maximum ?? 1000 }), hostileNumber);
      case 'number':
        return hostileNumber;
      case 'boolean':
        return fc.boolean();
      default:
        return anyJson;
    }
  })();
  return fc.oneof({ weight: 5, arbitrary: typed }, { weight: 1, arbitrary: anyJson });
}

/** A raw body: JSON of the schema or of anything, deep nesting, a big string, or bytes that are not JSON. */
export interface RawBody {
  contentType?: string;
  contentEncoding?: string;
  body?: Uint8Array | string;
  what: string;
}

const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const deepObject = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

export function bodyFor(op: Operation): fc.Arbitrary<RawBody> {
  const json = (what: string) => (v: unknown): RawBody => ({ contentType: 'application/json', body: JSON.stringify(v) ?? 'null', what });
  return fc.oneof(
    { weight: 6, arbitrary: fromSchema(op.bodySchema).map(json('schema')) },
    { weight: 2, arbitrary: anyJson.map(json('any JSON')) },
    { weight: 1, arbitrary: fc.constant<RawBody>({ what: 'no body' }) },
    { weight: 1, arbitrary: fc.integer({ min: 2000, max: 20000 }).map((d) => ({ contentType: 'application/json', body: deepArray(d), what: `array nested ${d} deep` })) },
    { weight: 1, arbitrary: fc.integer({ min: 2000, max: 20000 }).map((d) => ({ contentType: 'application/json', body: deepObject(d), what: `object nested ${d} deep` })) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }).map((mb) => ({ contentType: 'application/json', body: JSON.stringify({ name: 'x'.repeat(mb * 1024 * 1024) }), what: `${mb} MB string` })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => ({ contentType: 'application/json', body: b, what: 'bytes as JSON' })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => ({ contentType: 'application/x-protobuf', body: b, what: 'bytes as protobuf' })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => ({ contentType: 'application/json', contentEncoding: 'gzip', body: b, what: 'not gzip, said gzip' })) },
    {
      weight: 1,
      arbitrary: fc.dictionary(hostileString, fc.oneof(hostileString, anyJson.map((v) => JSON.stringify(v) ?? '')), { maxKeys: 4 })
        .map((d) => ({ contentType: 'application/x-www-form-urlencoded', body: new URLSearchParams(d).toString(), what: 'form' })),
    },
    { weight: 1, arbitrary: hostileString.map((s) => ({ contentType: 'text/plain', body: s, what: 'text' })) },
  );
}
