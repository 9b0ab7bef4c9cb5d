/** The version of the running Sluice: package.json's, read once (src/ and dist/ are both one level below it). */
import { createRequire } from 'node:module';

export const VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
