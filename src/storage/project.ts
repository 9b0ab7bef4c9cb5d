import { DomainError } from '../domain-errors.js';

/**
 * The one project this node serves and its default branch. The APIs accept the branch as its
 * numeric id or as the literal "default" and always answer with the numeric id.
 */
export class Project {
  constructor(
    readonly id: number,
    readonly defaultBranchId: number,
  ) {}

  /** Resolves a {branchId} path parameter; throws 404 branchNotFound for anything else. */
  resolveBranch(param: string): number {
    if (param === 'default' || param === String(this.defaultBranchId)) return this.defaultBranchId;
    throw new DomainError('notFound', 'branchNotFound', `Branch "${param}" not found in the project.`);
  }
}
