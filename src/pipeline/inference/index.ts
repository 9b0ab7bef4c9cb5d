/** A sink mapping proposed from sampled bodies (POST .../sinks/infer): pure, values in, proposal out. */
export { MappingSampler, MAX_COLUMNS, MAX_DEPTH, MAX_FIELDS, RECEIVED_AT, type Proposal } from './propose.js';
export { baseTypeOf, kindOf, numberKind, VALUE_KINDS } from './value-kinds.js';
export { ColumnNames, columnNameOf } from './column-names.js';
