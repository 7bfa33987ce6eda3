import type { Flags, OptionSpecs } from './args.ts';
import type { Progress } from './progress.ts';

/** What every command runs with: its flags, the process's streams and environment, and a stop signal. */

export interface OutStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface CliIo {
  stdout: OutStream;
  stderr: OutStream;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Aborted on SIGINT/SIGTERM: long-running commands (listen, bank-sim) stop on it. */
  signal: AbortSignal;
}

export interface CommandContext {
  /** Full command name, e.g. "payments list". */
  name: string;
  flags: Flags;
  positionals: string[];
  io: CliIo;
  /** A line for people on stderr, prefixed "dispersa: "; stdout stays one JSON document. */
  note(text: string): void;
  /** A progress indicator on stderr (only on a terminal, or with --progress). */
  progress(label: string): Progress;
}

/** Returned by a command that wrote its own output (listen prints one line per event). */
export const PRINTED = Symbol('printed');

export type CommandRun = (ctx: CommandContext) => Promise<unknown>;

/** The names of a module's exports that are command runners (so a loader can only name a runner). */
export type RunnerName<M> = { [K in keyof M]: M[K] extends CommandRun ? K : never }[keyof M];

/** Which connection flags a command takes. */
export type Connection = 'client' | 'public' | 'admin' | 'none';

export interface CommandSpec {
  name: string;
  group: 'client' | 'operator' | 'tools';
  summary: string;
  /** Positional argument names, shown as <name>. */
  args?: readonly string[];
  options?: OptionSpecs;
  connection: Connection;
  /** Extra help text under the usage line. */
  details?: string;
  /** Lazy, so that `dispersa me` never loads the listener, the bank simulator or the server. */
  load(): Promise<CommandRun>;
}
