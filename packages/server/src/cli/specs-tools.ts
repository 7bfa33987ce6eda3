import type { CommandRun, CommandSpec, RunnerName } from './command.ts';

/** Local tools: key pairs, and the processes that run beside the service. */

type ToolsModule = typeof import('./commands/tools.ts');

const tools = (name: RunnerName<ToolsModule>) => async (): Promise<CommandRun> =>
  (await import('./commands/tools.ts'))[name];

export const TOOL_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'keygen',
    group: 'tools',
    summary: 'make an RSA key pair for signing requests',
    connection: 'none',
    options: {
      'out-dir': { type: 'string', value: 'DIR', description: 'where to write the two PEM files (.)' },
      name: { type: 'string', value: 'NAME', description: 'file name prefix (dispersa)' },
      bits: { type: 'string', value: 'N', description: 'modulus length (2048)' },
    },
    load: tools('keygen'),
  },
  {
    name: 'bank-sim',
    group: 'tools',
    summary: 'run the bank simulator (BANK_SIM_* variables)',
    connection: 'none',
    details:
      'BANK_SIM_KEY_ID and BANK_SIM_SECRET (≥ 32 characters) are required; BANK_SIM_PORT, BANK_SIM_HOST,\n' +
      'BANK_SIM_OWN_BANK_CODE, BANK_SIM_OPENING_BALANCE_VES and BANK_SIM_SETTLE_MS are optional.',
    load: tools('bankSim'),
  },
  {
    name: 'worker',
    group: 'tools',
    summary: 'run the background loops without listeners (same configuration variables as npm start)',
    connection: 'none',
    options: {},
    load: tools('worker'),
  },
];
