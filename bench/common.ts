/** What several benches share: the median of their samples, and the built CLI they time. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** Exits with the command to run when the CLI bundle that `name` times is not built. */
export function requireCliBundle(name: string): void {
  if (!existsSync(fileURLToPath(new URL('../cli/dist/bundle/svc.cjs', import.meta.url)))) {
    console.error(`${name}: the CLI bundle is missing; run npm run build first`);
    process.exit(1);
  }
}
