import { DomainError } from '../domain-errors.js';
import type { Column, MappingFilter } from './definition.js';

/**
 * Checks a mapping's templates and its filter; returns `Column "x" template is invalid: <error>`,
 * `Filter is invalid: <error>` or undefined.
 */
export type MappingChecker = (columns: Column[], filter?: MappingFilter) => Promise<string | undefined>;

/**
 * Checks of a sink mapping the JSON schema cannot express: unique column names, the fields
 * each column type needs, and the syntax of templates and of the filter (400 with the position
 * of the error).
 */
export async function checkColumns(columns: Column[], checkTemplates: MappingChecker, filter?: MappingFilter): Promise<void> {
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) throw new DomainError('invalid', 'badRequest', `Column "${c.name}" is defined more than once: column names must be unique.`);
    seen.add(c.name);
    if (c.type === 'path' && c.path === undefined) throw new DomainError('invalid', 'badRequest', `Column "${c.name}" of type "path" needs the field "path".`);
    if (c.type === 'template' && !c.template) throw new DomainError('invalid', 'badRequest', `Column "${c.name}" of type "template" needs the field "template".`);
  }
  const invalid = await checkTemplates(columns, filter);
  if (invalid) throw new DomainError('invalid', 'badRequest', invalid);
}
