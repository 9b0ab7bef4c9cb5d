/** Column renderers of the record's path: the API of this folder. */
export { createRecordContext, LazyRecordContext, parseBody, bodyFormat } from './record-context.js';
export { compileMapping, validateMapping, type CompiledMapping, type MappedRow } from './mapping.js';
export { MappingError, formatColumnError, type MappingErrorKind } from './errors.js';
export { testEndpointIp, normalizeIp } from './ip.js';
export { parsePath, lookupPath, type BodyPath } from './path.js';
export { JsonObject, JsonNumber, parseJson, stringifyJson, toPlain, type JsonValue } from './json.js';
export { strftime, DEFAULT_NOW_FORMAT } from './strftime.js';
