import type { OptionSpecs } from './args.ts';
import type { CommandSpec } from './command.ts';
import { COMMANDS } from './commands.ts';
import { ADMIN_OPTIONS, CLIENT_OPTIONS, PUBLIC_OPTIONS } from './connection.ts';

/** Help text, generated from the command table so it cannot fall behind the commands. */

export const COMMON_OPTIONS: OptionSpecs = {
  pretty: { type: 'boolean', description: 'a readable table instead of JSON' },
  progress: { type: 'boolean', description: 'progress on stderr even when it is not a terminal' },
  quiet: { type: 'boolean', description: 'no notes or progress on stderr (errors still print)' },
  help: { type: 'boolean', short: 'h', description: 'show help' },
};

export function connectionOptions(spec: CommandSpec): OptionSpecs {
  switch (spec.connection) {
    case 'client':
      return CLIENT_OPTIONS;
    case 'public':
      // listen and webhook keys may fall back to a signed fetch of the key set.
      return spec.name === 'version' ? PUBLIC_OPTIONS : CLIENT_OPTIONS;
    case 'admin':
      return ADMIN_OPTIONS;
    case 'none':
      return {};
  }
}

function optionLines(specs: OptionSpecs): string[] {
  const rows = Object.entries(specs).map(([name, spec]) => {
    const flag = `${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.value ? ` ${spec.value}` : ''}`;
    return [flag, spec.description + (spec.multiple ? ' (repeatable)' : '')] as const;
  });
  const width = Math.max(0, ...rows.map(([flag]) => flag.length));
  return rows.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`);
}

export function usageLine(spec: CommandSpec): string {
  const args = (spec.args ?? []).map((a) => ` <${a}>`).join('');
  return `dispersa ${spec.name}${args} [flags]`;
}

export function commandHelp(spec: CommandSpec): string {
  const lines = [`Usage: ${usageLine(spec)}`, '', spec.summary];
  if (spec.details) lines.push('', spec.details);
  if (spec.options && Object.keys(spec.options).length > 0) lines.push('', 'Flags:', ...optionLines(spec.options));
  const connection = connectionOptions(spec);
  if (Object.keys(connection).length > 0) lines.push('', 'Connection:', ...optionLines(connection));
  lines.push('', 'Common:', ...optionLines(COMMON_OPTIONS));
  return `${lines.join('\n')}\n`;
}

const GROUPS: { group: CommandSpec['group']; title: string }[] = [
  { group: 'client', title: 'Client commands (DISPERSA_BASE_URL, DISPERSA_API_KEY, DISPERSA_PRIVATE_KEY_FILE)' },
  { group: 'operator', title: 'Operator commands (DISPERSA_ADMIN_URL, DISPERSA_ADMIN_TOKEN)' },
  { group: 'tools', title: 'Tools' },
];

export function generalHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length + (c.args ?? []).map((a) => ` <${a}>`).join('').length));
  const lines = [
    'dispersa: payouts in bolivares (VES). Client API, operator API and local tools.',
    '',
    'Usage: dispersa <command> [flags]',
  ];
  for (const { group, title } of GROUPS) {
    lines.push('', `${title}:`);
    for (const c of COMMANDS.filter((x) => x.group === group)) {
      const name = c.name + (c.args ?? []).map((a) => ` <${a}>`).join('');
      lines.push(`  ${name.padEnd(width)}  ${c.summary}`);
    }
  }
  lines.push(
    '',
    'Flags for every command:',
    ...optionLines(COMMON_OPTIONS),
    '',
    'Output: the answer as JSON on stdout (--pretty: a table); notes and errors on stderr, an error as',
    'one JSON object {"error", "status", "traceId"}. Exit status: 0 success, 1 the service answered with an',
    'error, 2 wrong usage or missing credentials (nothing sent), 3 no answer (a write may or may not have',
    'happened: retry with the same --idempotency-key).',
    '',
    '`dispersa <command> --help` shows its flags. Full reference: docs/cli.md.',
  );
  return `${lines.join('\n')}\n`;
}
