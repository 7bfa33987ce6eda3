import { parseArgs } from 'node:util';

/**
 * Flag parsing for one command, on node:util parseArgs (strict: an unknown flag is a usage error, never ignored,
 * so a typo such as --amount-minr cannot silently send a payment without the intended amount).
 */

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** Shown in help, e.g. "N" or "URL"; booleans have none. */
  value?: string;
  description: string;
  multiple?: boolean;
  short?: string;
}

export type OptionSpecs = Record<string, OptionSpec>;

export type FlagValues = Record<string, string | boolean | string[] | undefined>;

/** Wrong or missing flags and arguments, bad local configuration: exit status 2, nothing was sent. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The command whose usage line to show, when one applies. */
    readonly command?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

export function parseFlags(
  args: readonly string[],
  specs: OptionSpecs,
  command?: string,
): { values: FlagValues; positionals: string[] } {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {};
  for (const [name, spec] of Object.entries(specs)) {
    options[name] = {
      type: spec.type,
      ...(spec.multiple ? { multiple: true } : {}),
      ...(spec.short ? { short: spec.short } : {}),
    };
  }
  try {
    const parsed = parseArgs({ args: positionalsLast(args, specs), options, allowPositionals: true, strict: true });
    return { values: { ...parsed.values } as FlagValues, positionals: parsed.positionals };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) throw err;
    const message = (err as Error).message;
    const unknown = /^Unknown option '([^']+)'/.exec(message);
    // node's own text goes on about positionals starting with '-', which misleads more than it helps here.
    if (!unknown) throw new UsageError(message.split('. ')[0]!, command);
    const nearest = nearestFlag(unknown[1]!, Object.keys(specs));
    throw new UsageError(
      `unknown flag ${unknown[1]}${nearest === undefined ? '' : `; did you mean --${nearest}?`}`,
      command,
    );
  }
}

/** Edit distance (insertions, deletions, substitutions), for suggesting a flag. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The flag a person most likely meant: one that starts with what was typed (--amount for --amount-minor), else
 * the closest by edit distance within a third of its length (--amount-minr). None when nothing is close.
 */
export function nearestFlag(typed: string, names: readonly string[]): string | undefined {
  const word = typed.replace(/^-+/, '').split('=')[0]!.toLowerCase();
  if (word.length < 2) return undefined;
  const prefixed = names.filter((n) => n.startsWith(word) || n.replace(/-/g, '') === word.replace(/[-_]/g, ''));
  if (prefixed.length > 0) return prefixed.sort((a, b) => a.length - b.length)[0];
  let best: { name: string; d: number } | undefined;
  if (word.length < 3) return undefined;
  for (const name of names) {
    const d = distance(word, name);
    if (d <= Math.max(1, Math.floor(name.length / 3)) && (best === undefined || d < best.d)) best = { name, d };
  }
  return best?.name;
}

/** Every flag we define is spelled like this; a `--` token that is not could only be a value. */
const FLAG_NAME = /^[a-z][a-z0-9-]*(=|$)/;

/**
 * Puts every positional after a `--`, in order, so that parseArgs never reads one as flags. Signing key ids are
 * base64url and one in 64 starts with '-': `retire-key -xdGO...` must retire that key, not fail on flag -x.
 * A single-dash token longer than two characters is therefore a value (we define no groups of short flags), so
 * is a double-dash token that no flag name could spell (one kid in 4,096 starts `--` and then has an upper-case
 * letter, a digit or '_' in all but ~1e-10 of cases), and a string flag's value is taken whatever it starts with.
 * A mistyped flag stays an error either way: as an unknown flag, or as an argument the command does not take.
 */
function positionalsLast(args: readonly string[], specs: OptionSpecs): string[] {
  const shortNames = new Map<string, string>();
  for (const [name, spec] of Object.entries(specs)) if (spec.short) shortNames.set(spec.short, name);
  const flags: string[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    const name = arg.startsWith('--')
      ? FLAG_NAME.test(arg.slice(2))
        ? arg.slice(2)
        : undefined
      : arg.length === 2 && arg.startsWith('-')
        ? (shortNames.get(arg[1]!) ?? arg)
        : undefined;
    if (name === undefined) {
      positionals.push(arg);
    } else if (!name.includes('=') && specs[name]?.type === 'string' && i + 1 < args.length) {
      flags.push(`--${name}=${args[++i]}`);
    } else {
      flags.push(arg);
    }
  }
  return [...flags, '--', ...positionals];
}

/** Accessors that turn parsed flags into checked values. */
export interface Flags {
  string(name: string): string | undefined;
  required(name: string): string;
  boolean(name: string): boolean;
  list(name: string): string[];
  /** A non-negative integer flag, e.g. --limit. */
  integer(name: string): number | undefined;
}

export function flagsOf(values: FlagValues, command: string): Flags {
  const string = (name: string): string | undefined => {
    const value = values[name];
    return typeof value === 'string' ? value : undefined;
  };
  return {
    string,
    required(name) {
      const value = string(name);
      if (value === undefined || value === '') throw new UsageError(`--${name} is required`, command);
      return value;
    },
    boolean: (name) => values[name] === true,
    list(name) {
      const value = values[name];
      return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
    },
    integer(name) {
      const value = string(name);
      if (value === undefined) return undefined;
      if (!/^\d{1,9}$/.test(value)) throw new UsageError(`--${name} must be a whole number, got "${value}"`, command);
      return Number(value);
    },
  };
}

/** Exactly the named positional arguments, in order. */
export function takePositionals(positionals: readonly string[], names: readonly string[], command: string): string[] {
  if (positionals.length < names.length) {
    throw new UsageError(
      `missing ${names
        .slice(positionals.length)
        .map((n) => `<${n}>`)
        .join(' ')}`,
      command,
    );
  }
  if (positionals.length > names.length) {
    throw new UsageError(`unexpected argument "${positionals[names.length]}"`, command);
  }
  return [...positionals];
}
