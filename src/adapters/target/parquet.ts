/**
 * CSV to Parquet through an in-memory DuckDB, for targets that cannot write Parquet themselves
 * (PostgreSQL): the export is written as CSV first, then converted, streaming on DuckDB's side.
 */
import { DuckDBInstance } from '@duckdb/node-api';

/** A DuckDB string literal. */
export function duckLiteral(value: string): string {
  if (value.includes('\u0000')) throw new Error('a literal cannot contain NUL');
  return `'${value.replaceAll("'", "''")}'`;
}

export function duckIdent(name: string): string {
  if (name.includes('\u0000')) throw new Error('identifiers cannot contain NUL');
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Converts a CSV file with a header row (RFC 4180) of these columns into a Parquet file of
 * string columns; an empty value stays an empty string.
 */
export async function csvToParquet(csvPath: string, parquetPath: string, columns: readonly string[]): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
  try {
    const connection = await instance.connect();
    try {
      const spec = columns.map((c, i) => `${duckLiteral(`c${i}`)}: 'VARCHAR'`).join(', ');
      const select = columns.map((c, i) => `COALESCE(c${i}, '') AS ${duckIdent(c)}`).join(', ');
      await connection.run(
        `COPY (SELECT ${select} FROM read_csv(${duckLiteral(csvPath)}, header = true, auto_detect = false,
           delim = ',', quote = '"', escape = '"', columns = {${spec}}))
         TO ${duckLiteral(parquetPath)} (FORMAT parquet)`,
      );
    } finally {
      connection.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}
