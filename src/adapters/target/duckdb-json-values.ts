/**
 * Query answers' values as JSON carries them, as @duckdb/node-api's JSON converter gives them,
 * but for timestamps: ISO 8601 in UTC with a `Z` and DuckDB's microseconds
 * (`2026-11-26T13:40:31.270418Z`), as the PostgreSQL target and every other time in the APIs
 * answer, instead of the converter's `2026-11-26 13:40:31.270418` (no zone) and
 * `2026-11-26 13:40:31.270418+00`.
 */
import { DuckDBTimestampTZValue, DuckDBTimestampValue, DuckDBTypeId, JsonDuckDBValueConverter, type DuckDBValueConverter, type Json } from '@duckdb/node-api';

export const jsonQueryValue: DuckDBValueConverter<Json> = (value, type) => {
  if ((type.typeId === DuckDBTypeId.TIMESTAMP || type.typeId === DuckDBTypeId.TIMESTAMP_TZ)
    && (value instanceof DuckDBTimestampValue || value instanceof DuckDBTimestampTZValue)) {
    return isoFromMicros(value.micros) ?? JsonDuckDBValueConverter(value, type, jsonQueryValue);
  }
  return JsonDuckDBValueConverter(value, type, jsonQueryValue);
};

/** ISO 8601 UTC with six fractional digits; undefined where a Date cannot hold it (infinity). */
export function isoFromMicros(micros: bigint): string | undefined {
  const millis = micros / 1000n;
  let subMillis = micros % 1000n;
  let whole = millis;
  if (subMillis < 0n) {
    subMillis += 1000n;
    whole -= 1n;
  }
  const date = new Date(Number(whole));
  if (Number.isNaN(date.getTime()) || date.getUTCFullYear() < 0 || date.getUTCFullYear() > 9999) return undefined;
  return `${date.toISOString().slice(0, -1)}${subMillis.toString().padStart(3, '0')}Z`;
}
