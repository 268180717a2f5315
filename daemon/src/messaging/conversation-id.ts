/**
 * A direct conversation's id is derived, never chosen: `dm:<a>:<b>` of the two agent
 * numbers, sorted. An inbound envelope is archived only under the id of (its verified
 * sender, us), and a send by conversation id goes only to the other party of that id, so
 * no sender can place a message in, or draw a reply from, someone else's conversation.
 * Agent numbers are letters, digits, `_` and `-`, so the id parses back unambiguously.
 */
export const directConversationId = (a: string, b: string): string => `dm:${[a, b].sort().join(':')}`;

const DIRECT_ID = /^dm:([A-Za-z0-9_-]{1,128}):([A-Za-z0-9_-]{1,128})$/;

/** The other party of a canonical direct conversation id that `me` belongs to; undefined otherwise. */
export function directPeer(conversationId: string, me: string): string | undefined {
  const m = DIRECT_ID.exec(conversationId);
  if (!m) return undefined;
  const [, x = '', y = ''] = m;
  if (directConversationId(x, y) !== conversationId) return undefined;
  if (x === me) return y;
  if (y === me) return x;
  return undefined;
}
