import { flagsOf, parseFlags, takePositionals, UsageError } from './args.ts';
import { type CliIo, type CommandContext, type CommandSpec, PRINTED } from './command.ts';
import { findCommand } from './commands.ts';
import { COMMON_OPTIONS, commandHelp, connectionOptions, generalHelp, usageLine } from './help.ts';
import { EXIT, formatError, formatResult, reportError } from './output.ts';
import { createProgress, silentProgress } from './progress.ts';

/**
 * One CLI invocation: find the command, parse its flags, run it, print the result, and return the exit status.
 * Kept apart from main.ts (process wiring) so that every path is the same whether run as a process or called.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const first = argv[0];
  if (first === undefined || first === '--help' || first === '-h' || (first === 'help' && argv.length === 1)) {
    io.stdout.write(generalHelp());
    return EXIT.ok;
  }
  if (first === '--version') {
    const { SERVICE_VERSION } = await import('../version.ts');
    io.stdout.write(`${JSON.stringify({ dispersa: SERVICE_VERSION })}\n`);
    return EXIT.ok;
  }
  const askHelp = first === 'help';
  const found = findCommand(askHelp ? argv.slice(1) : argv);
  const pretty = argv.includes('--pretty');
  if (found === null) {
    const words = argv.filter((a) => !a.startsWith('-')).join(' ');
    io.stderr.write('see `dispersa --help` for the commands\n');
    io.stderr.write(formatError({ exitCode: EXIT.usage, body: { error: `unknown command "${words}"` } }, pretty));
    return EXIT.usage;
  }
  const { spec, rest } = found;
  if (askHelp) {
    io.stdout.write(commandHelp(spec));
    return EXIT.ok;
  }
  try {
    const specs = { ...COMMON_OPTIONS, ...connectionOptions(spec), ...spec.options };
    const { values, positionals } = parseFlags(rest, specs, spec.name);
    if (values['help'] === true) {
      io.stdout.write(commandHelp(spec));
      return EXIT.ok;
    }
    const flags = flagsOf(values, spec.name);
    const ctx = contextFor(spec, flags, takePositionals(positionals, spec.args ?? [], spec.name), io);
    const run = await spec.load();
    const result = await run(ctx);
    if (result !== PRINTED) io.stdout.write(formatResult(result, pretty));
    return EXIT.ok;
  } catch (err) {
    const report = reportError(err, spec.connection);
    // People read the lines above; programs read the last line, the error as JSON.
    if (err instanceof UsageError && err.command !== undefined) {
      io.stderr.write(`usage: ${usageLine(spec)}   (dispersa ${spec.name} --help)\n`);
    }
    if (report.hint && !argv.includes('--quiet')) io.stderr.write(`dispersa: ${report.hint}\n`);
    if (report.exitCode === EXIT.internal && io.env['DISPERSA_DEBUG'] && err instanceof Error) {
      io.stderr.write(`${err.stack}\n`);
    }
    io.stderr.write(formatError(report, pretty));
    return report.exitCode;
  }
}

function contextFor(
  spec: CommandSpec,
  flags: CommandContext['flags'],
  positionals: string[],
  io: CliIo,
): CommandContext {
  const quiet = flags.boolean('quiet');
  const forced = flags.boolean('progress');
  return {
    name: spec.name,
    flags,
    positionals,
    io,
    note(text) {
      if (!quiet) io.stderr.write(`dispersa: ${text}\n`);
    },
    progress(label) {
      if (quiet || !(forced || io.stderr.isTTY)) return silentProgress;
      return createProgress({ stream: io.stderr, label, inPlace: io.stderr.isTTY === true });
    },
  };
}
