export {
  type AddLineError,
  type AddLineInput,
  type AddLineResult,
  createSandboxBank,
  DEFAULT_VES_OPENING_MINOR,
  type SandboxBank,
  type SandboxBankDeps,
  type SuppressDebitResult,
} from './bank.ts';
export { type LineOrigin, renderRaw, type SandboxBankLine, valueDateOf } from './lines.ts';
export { createSandboxRail, type SandboxRailDeps } from './rail.ts';
export { chooseScenario, SCENARIOS, type Scenario, type ScenarioName } from './scenarios.ts';
export { createSandboxStatementSource, type SandboxStatementDeps } from './statement-source.ts';
