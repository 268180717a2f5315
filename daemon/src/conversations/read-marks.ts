/** What `svc read` shows of a gap: the numbers of a noted gap that have still not arrived. */
import type { Archive } from '../archive/archive.js';
import type { ArchivedMessage } from '../client/api.js';
import { stillMissing } from './sequence.js';

export function withMissing(archive: Archive, messages: ArchivedMessage[]): ArchivedMessage[] {
  const held = new Map<string, Set<number>>();
  return messages.map((m) => {
    if (!m.sequence?.gap) return m;
    const key = `${m.conversation_id}\u0000${m.from}`;
    let seqs = held.get(key);
    if (!seqs) {
      seqs = archive.heldSeqs(m.conversation_id, m.from);
      held.set(key, seqs);
    }
    const set = seqs;
    return { ...m, sequence: { ...m.sequence, missing: stillMissing(m.sequence, (n) => set.has(n)) } };
  });
}
