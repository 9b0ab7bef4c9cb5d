// Types of build-if-stale.mjs, for the tests.
export declare const ROOT: string;
export declare const INPUTS: string[];
export declare const OUTPUTS: string[];
export declare const STAMP: string;
export type Fingerprint = Record<string, string>;
export interface Decision {
  needed: boolean;
  reason: string;
}
export declare function scanInputs(root?: string, inputs?: string[]): Fingerprint;
export declare function buildNeeded(args: { stamp: Fingerprint | undefined; current: Fingerprint; missingOutputs?: string[] }): Decision;
export declare function checkBuild(root?: string): Decision;
export declare function ensureBuilt(root?: string, log?: (line: string) => void): boolean;
