/** JSON that a peer wrote (a message's content): parsed without throwing, checked before use. No Node module: the dashboard page imports it too. */

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The value, or undefined when the text is not JSON. */
export function parseJson(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch {
    return undefined;
  }
}
