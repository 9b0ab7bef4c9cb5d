import { ApiError } from '../../api/errors.js';

/** Errors of the configuration API with the reference's codes and messages (§2.5). */
export const configurationNotFound = (id: string): ApiError =>
  new ApiError(404, 'storage.configuration.notFound', `Configuration "${id}" not found`);

export const rowNotFound = (rowId: string): ApiError => new ApiError(404, 'notFound', `Row ${rowId} not found`);

export const versionNotFound = (version: string | number): ApiError => new ApiError(404, 'notFound', `Version ${version} not found`);

export const configurationAlreadyExists = (id: string): ApiError =>
  new ApiError(400, 'configurationAlreadyExists', `Configuration with id "${id}" already exists.`);

export const rowAlreadyExists = (rowId: string): ApiError =>
  new ApiError(400, 'configurationRowAlreadyExists', `Row with id "${rowId}" already exists.`);

export const invalidConfigurationFormat = (detail: string): ApiError =>
  new ApiError(400, 'validation.invalidConfigurationFormat', `Configuration is not a valid JSON object: ${detail}`);

export const invalidStateFormat = (detail: string): ApiError =>
  new ApiError(400, 'validation.invalidStateFormat', `State is not a valid JSON object: ${detail}`);
