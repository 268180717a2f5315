/** The harness's freePort: the ports it hands out are free and never the same twice. */
import { createServer } from 'node:net';
import { freePort } from '@svc/test-harness';
import { expect, it } from 'vitest';

it('never hands out the same port twice, even when the OS offers it again', async () => {
  // the OS offers a closed listener's port again soon: thousands of draws see repeats
  const ports: number[] = [];
  for (let i = 0; i < 3000; i++) ports.push(await freePort());
  expect(new Set(ports).size).toBe(ports.length);
  // and one is free to listen on
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(ports.at(-1), '127.0.0.1', resolve);
  });
  await new Promise((resolve) => server.close(resolve));
});
