/**
 * Why a record could not be mapped into a sink's row.
 *
 * `kind` says what the failure is, so that each caller can choose its status:
 *  - `invalidBody`           the body is not valid JSON / form data (ingestion: 400 badRequest)
 *  - `unsupportedMediaType`  Body()/path on a content type other than JSON or form (415)
 *  - `notFound`              a path or header that is missing and has no default
 *  - `template`              any other Jsonnet evaluation error
 *  - `conversion`            a typed column's value that does not convert to its type (typed-values.ts)
 *  - `internal`              a bug or an unavailable engine
 * The test endpoint answers every kind with 422 `stream.api.unprocessableContent`.
 */
export type MappingErrorKind = 'invalidBody' | 'unsupportedMediaType' | 'notFound' | 'template' | 'conversion' | 'internal';

export class MappingError extends Error {
  /**
   * @param reason lower-case reason without a trailing period, e.g. `path "key" not found in the body`
   * @param column the column whose value failed; the message names it when set
   */
  constructor(
    readonly reason: string,
    readonly kind: MappingErrorKind,
    readonly column?: string,
  ) {
    super(column === undefined ? reason : formatColumnError(column, reason));
    this.name = 'MappingError';
  }

  /** The same failure attributed to a column. */
  forColumn(column: string): MappingError {
    return new MappingError(this.reason, this.kind, column);
  }

  /**
   * Suggested HTTP status of the failure at ingestion: 400 bad body, 415 content type,
   * 422 for a missing path/header or a template error (the reference's 500 there is a quirk
   * Sluice does not keep), 500 internal.
   */
  get ingestStatus(): 400 | 415 | 422 | 500 {
    switch (this.kind) {
      case 'invalidBody':
        return 400;
      case 'unsupportedMediaType':
        return 415;
      case 'internal':
        return 500;
      default:
        return 422;
    }
  }
}

/** `Invalid value for column "<name>": <reason>.` (one final period). */
export function formatColumnError(column: string, reason: string): string {
  return `Invalid value for column "${column}": ${reason}${reason.endsWith('.') ? '' : '.'}`;
}
