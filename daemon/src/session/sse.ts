/** A minimal server-sent-events reader (the relay's message stream): id, event, data. */
import type { Readable } from 'node:stream';
import { MESSAGE_LIMITS } from '@svc/shared';
import { DaemonError } from '../errors.js';

/** One event carries one envelope (256 KiB at most) and its framing; a longer one is refused. */
export const MAX_SSE_EVENT_BYTES = MESSAGE_LIMITS.maxEnvelopeBytes + 64 * 1024;

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

function tooLong(stream: Readable, max: number): DaemonError {
  stream.destroy();
  return new DaemonError('relay_answer_too_large', `an event of the relay's stream is over ${max} bytes`);
}

/** Events of `stream`; one longer than `maxEventBytes` (UTF-16 units, close enough) ends it with an error. */
export async function* readSse(stream: Readable, maxEventBytes = MAX_SSE_EVENT_BYTES): AsyncGenerator<SseEvent> {
  let buffer = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  let pending = 0; // data held for the event being read
  stream.setEncoding('utf8');
  for await (const chunk of stream as AsyncIterable<string>) {
    buffer += chunk;
    let nl = buffer.indexOf('\n');
    while (nl >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      nl = buffer.indexOf('\n');
      if (line === '') {
        if (data.length > 0 || event !== '')
          yield { ...(id !== undefined ? { id } : {}), event: event || 'message', data: data.join('\n') };
        event = '';
        data = [];
        pending = 0;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') {
        data.push(value);
        pending += value.length;
        if (pending > maxEventBytes) throw tooLong(stream, maxEventBytes);
      }
    }
    // what is held for the event not yet complete: its data and its unfinished line
    if (buffer.length + pending > maxEventBytes) throw tooLong(stream, maxEventBytes);
  }
}
