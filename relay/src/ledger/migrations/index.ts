import { migration001 } from './001-initial.js';
import type { Migration } from './types.js';

/** Ordered; a version is never edited once released, only followed by a new one. */
export const MIGRATIONS: readonly Migration[] = [migration001];
export type { Migration } from './types.js';
