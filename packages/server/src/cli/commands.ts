import type { CommandSpec } from './command.ts';
import { CLIENT_COMMANDS } from './specs-client.ts';
import { OPERATOR_COMMANDS } from './specs-operator.ts';
import { TOOL_COMMANDS } from './specs-tools.ts';

/**
 * Every command of `dispersa`, as data: name, flags, help text and a lazy loader. Nothing here imports the SDK
 * calls, the listener or the server, so `dispersa --help` and each command start fast.
 */
export const COMMANDS: readonly CommandSpec[] = [...CLIENT_COMMANDS, ...OPERATOR_COMMANDS, ...TOOL_COMMANDS];

/** Boolean flags that may also stand before the command words: `dispersa --pretty me`. */
export const LEADING_FLAGS: readonly string[] = ['--pretty', '--progress', '--quiet', '--help', '-h'];

/** The command whose words begin argv, longest match first ("payments list" before "payments"). */
export function findCommand(argv: readonly string[]): { spec: CommandSpec; rest: string[] } | null {
  let start = 0;
  while (start < argv.length && LEADING_FLAGS.includes(argv[start]!)) start++;
  let end = start;
  while (end < argv.length && end - start < 3 && !argv[end]!.startsWith('-')) end++;
  for (let n = end - start; n > 0; n--) {
    const spec = COMMANDS.find((c) => c.name === argv.slice(start, start + n).join(' '));
    if (spec) return { spec, rest: [...argv.slice(0, start), ...argv.slice(start + n)] };
  }
  return null;
}
