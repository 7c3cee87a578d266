/**
 * Argument parsing for the CLI commands, on node:util parseArgs, with usage text per command.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {}

export interface CommandSpec {
  readonly usage: string;
  readonly options: NonNullable<ParseArgsConfig['options']>;
}

export interface ParsedCommand {
  /** String options by name. */
  readonly values: Readonly<Record<string, string | undefined>>;
  /** Boolean options that were given (`help` included). */
  readonly flags: ReadonlySet<string>;
  readonly positionals: readonly string[];
}

export function parseCommand(spec: CommandSpec, argv: readonly string[]): ParsedCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...spec.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n\n${spec.usage}`);
  }
  const values: Record<string, string | undefined> = {};
  const flags = new Set<string>();
  for (const [name, value] of Object.entries(parsed.values)) {
    if (typeof value === 'string') values[name] = value;
    else if (value === true) flags.add(name);
  }
  return { values, flags, positionals: parsed.positionals };
}

/** A positive integer option; throws a usage error naming the option otherwise. */
export function integerOption(value: string | undefined, name: string, fallback: number, spec: CommandSpec): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(parsed)) {
    throw new UsageError(`--${name} must be a non-negative integer, got "${String(value)}"\n\n${spec.usage}`);
  }
  return parsed;
}
