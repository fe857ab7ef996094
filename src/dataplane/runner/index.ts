export type { RestartPolicy, RunnerOptions } from './runner.js';
export { DEFAULT_RESTART_POLICY, runWorkload } from './runner.js';
export { abortOnStopSignals } from './signals.js';
