import { AGENT_NUMBER_PATTERN, newMessageId, type SendResponse, SendResult, UUID_V7_PATTERN } from '@svc/shared';
import { expect, it } from 'vitest';
import { sendResponseJson } from './send-response.js';

const AGENT_NUMBER_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';

it('writes what JSON.stringify writes, for ids and agent numbers of every character their patterns allow', () => {
  const results: SendResponse['results'] = [];
  for (let i = 0; i < AGENT_NUMBER_CHARS.length; i++) {
    const recipient = AGENT_NUMBER_CHARS.slice(i) + AGENT_NUMBER_CHARS.slice(0, i);
    const message_id = newMessageId(1_700_000_000_000 + i);
    expect(recipient).toMatch(AGENT_NUMBER_PATTERN);
    expect(message_id).toMatch(UUID_V7_PATTERN);
    results.push({ message_id, recipient, status: i % 2 ? 'duplicate' : 'accepted' });
  }
  for (const response of [{ results }, { results: results.slice(0, 1) }, { results: [] }]) {
    expect(sendResponseJson(response)).toBe(JSON.stringify(response));
  }
});

it('writes every field a send result has (a new field must be written here too)', () => {
  const fields = Object.keys(SendResult.properties).sort();
  const parsed = JSON.parse(
    sendResponseJson({ results: [{ message_id: newMessageId(), recipient: 'a', status: 'accepted' }] }),
  ) as { results: Record<string, unknown>[] };
  expect(Object.keys(parsed.results[0] ?? {}).sort()).toEqual(fields);
});
