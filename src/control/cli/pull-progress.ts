/**
 * The runner's status context while a workload starts, as `skep run` shows it: an image
 * pull's `pulling image x: NN%` becomes a one-line progress bar (`start-wait.ts` draws it).
 */

const BAR_WIDTH = 30;

/** `pulling image x: 40%` → a one-line bar; other contexts are shown as they are. */
export function progressLine(context: string): string {
  const match = /^pulling image (.+): (\d+)%$/.exec(context);
  if (match === null) return context;
  const percent = Math.max(0, Math.min(100, Number(match[2])));
  const filled = Math.round((percent / 100) * BAR_WIDTH);
  return `pulling ${match[1]} [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${percent}%`;
}
