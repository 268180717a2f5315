export const ROOT: string;
export const STAMP: string;
export function staleSource(): string | undefined;
