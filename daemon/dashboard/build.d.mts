/** Types of build.mjs for the TypeScript tests that import it. */
export const DASHBOARD_OUT: string;
export function dashboardStale(outdir?: string): boolean;
export function buildDashboard(outdir?: string): Promise<string>;
