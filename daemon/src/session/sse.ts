/** A minimal server-sent-events reader (the relay's message stream): id, event, data. */
import type { Readable } from 'node:stream';

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export async function* readSse(stream: Readable): AsyncGenerator<SseEvent> {
  let buffer = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
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
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
  }
}
