/**
 * The folder of pipeline files (`./pipelines` by default): `<sourceId>.yaml` per source. Reading
 * checks every file before anything is sent; writing changes only the files whose bytes differ
 * (each through a temporary file and a rename, so an interrupted pull leaves no half file), and
 * removes the pipeline files of sources the server no longer has.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliError } from '../errors.js';
import { byteSizeString } from '../../pipeline/units.js';
import { FILE_SUFFIX, looksLikePipeline, parsePipeline, PipelineFileError, pipelineYaml, type ParsedFile, type ReadLimits } from './file-format.js';
import type { SourceDefinition } from './definition.js';

export interface ReadFile extends ParsedFile {
  file: string;
}

export interface ReadDir {
  files: ReadFile[];
  /** Files that are not read, and why (`web.yml`: pipeline files end in .yaml). */
  notes: string[];
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new CliError(`${dir} does not exist: "sluice pull ${dir}" writes the files of a server's sources there`);
    if (code === 'ENOTDIR') throw new CliError(`${dir} is not a folder`);
    throw new CliError(`cannot read ${dir}: ${(err as Error).message}`);
  }
}

/** Every `*.yaml` file of the folder, parsed and checked; all their problems at once (PipelineFileError). */
export function readPipelineDir(dir: string, limits: ReadLimits): ReadDir {
  const files: ReadFile[] = [];
  const notes: string[] = [];
  const problems: string[] = [];
  let count = 0;
  for (const name of entries(dir)) {
    const file = join(dir, name);
    if (name.endsWith('.yml')) notes.push(`${file}: not read (pipeline files end in ${FILE_SUFFIX})`);
    if (!name.endsWith(FILE_SUFFIX) || name.startsWith('.')) continue;
    const stat = statSync(file);
    if (!stat.isFile()) continue;
    if (stat.size > limits.maxBytes) {
      count++;
      problems.push(`${file}: is ${stat.size} bytes, more than a pipeline file may have (${byteSizeString(limits.maxBytes)}, --max-file-size)`);
      continue;
    }
    try {
      files.push({ file, ...parsePipeline(file, readFileSync(file, 'utf8'), limits) });
    } catch (err) {
      if (!(err instanceof PipelineFileError)) throw err;
      problems.push(...err.problems);
      count += err.count;
    }
  }
  if (problems.length > 0) throw new PipelineFileError(problems, count);
  return { files, notes };
}

export interface WriteResult {
  written: string[];
  unchanged: string[];
  removed: string[];
  /** `*.yaml` files that are not pipeline files: left as they are. */
  kept: string[];
}

/** Writes one file per source; removes the pipeline files of other sources. */
export function writePipelineDir(dir: string, sources: readonly SourceDefinition[], limits: ReadLimits): WriteResult {
  mkdirSync(dir, { recursive: true });
  const result: WriteResult = { written: [], unchanged: [], removed: [], kept: [] };
  const names = new Set<string>();
  for (const source of sources) {
    const name = `${source.sourceId}${FILE_SUFFIX}`;
    names.add(name);
    const file = join(dir, name);
    const text = pipelineYaml(source);
    let before: string | undefined;
    try {
      before = readFileSync(file, 'utf8');
    } catch {
      before = undefined;
    }
    if (before === text) {
      result.unchanged.push(file);
      continue;
    }
    const temporary = join(dir, `.${name}.${process.pid}.tmp`);
    writeFileSync(temporary, text);
    renameSync(temporary, file);
    result.written.push(file);
  }
  for (const name of entries(dir)) {
    if (!name.endsWith(FILE_SUFFIX) || names.has(name) || name.startsWith('.')) continue;
    const file = join(dir, name);
    const stat = statSync(file);
    if (!stat.isFile()) continue;
    if (stat.size <= limits.maxBytes && looksLikePipeline(readFileSync(file, 'utf8'))) {
      rmSync(file);
      result.removed.push(file);
    } else {
      result.kept.push(file);
    }
  }
  return result;
}
