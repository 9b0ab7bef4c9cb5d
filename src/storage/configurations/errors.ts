import { DomainError } from '../../domain-errors.js';

/** Errors of the configuration API with the reference's codes and messages. */
export const configurationNotFound = (id: string): DomainError =>
  new DomainError('notFound', 'storage.configuration.notFound', `Configuration "${id}" not found`);

export const rowNotFound = (rowId: string): DomainError => new DomainError('notFound', 'notFound', `Row ${rowId} not found`);

export const versionNotFound = (version: string | number): DomainError => new DomainError('notFound', 'notFound', `Version ${version} not found`);

// The Storage API answers 400, not 409, for a configuration or row that exists.
export const configurationAlreadyExists = (id: string): DomainError =>
  new DomainError('alreadyExists', 'configurationAlreadyExists', `Configuration with id "${id}" already exists.`, { status: 400 });

export const rowAlreadyExists = (rowId: string): DomainError =>
  new DomainError('alreadyExists', 'configurationRowAlreadyExists', `Row with id "${rowId}" already exists.`, { status: 400 });
