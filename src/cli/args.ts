/**
 * Command lines of the client commands, on node:util parseArgs (strict): an unknown option or a
 * missing value is a CliError with exit code 2 that names the option, the command's --help and
 * the closest option when one is close ("Did you mean --format?").
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { closestName } from '../model/did-you-mean.js';
import { CliError } from './errors.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export function parseCommandLine<T extends Options>(command: string, args: string[], options: T) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    const code = (err as { code?: string }).code;
    const help = `see "sluice ${command} --help"`;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const option = /'([^']+)'/.exec((err as Error).message)?.[1] ?? '';
      const closest = closestName(option, Object.keys(options).map((name) => `--${name}`));
      const hint = closest === undefined ? '' : `. Did you mean ${closest}?`;
      throw new CliError(`unknown option "${option}" for "sluice ${command}"${hint} (${help})`, 2);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const option = /'(-[^ ']+)/.exec((err as Error).message)?.[1] ?? '';
      throw new CliError(`option "${option}" needs a value (${help})`, 2);
    }
    throw new CliError(`${(err as Error).message} (${help})`, 2);
  }
}

/** A whole number ≥ min from an option value, or a usage error naming the option. */
export function integerOption(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min) {
    throw new CliError(`--${name} must be a whole number of at least ${min}, got "${value}"`, 2);
  }
  return n;
}

/** A comma-separated list ("a,b , c") from an option value, without empty items. */
export function listOption(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value.split(',').map((v) => v.trim()).filter((v) => v !== '');
}
