/**
 * Tool errors and deadlines without a healthy daemon: a socket nobody listens on is
 * daemon_unavailable; a daemon that accepts and never answers is daemon_timeout after the
 * client's deadline. Either way the tool answers with an MCP tool error, never hangs.
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DaemonClient } from '@svc/daemon/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createSvcMcp } from './server.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function connected(daemon: DaemonClient): Promise<Client> {
  const server = createSvcMcp({ client: daemon, agent: 'alice' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.mcp.connect(a);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(b);
  cleanups.push(() => client.close());
  return client;
}

const errorOf = (r: CallToolResult) => {
  expect(r.isError).toBe(true);
  return JSON.parse((r.content[0] as { text: string }).text) as { error: string; message: string };
};

describe('svc mcp without a healthy daemon', () => {
  it('no daemon: daemon_unavailable, with the command that starts it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-mcp-'));
    const client = await connected(new DaemonClient({ socketPath: join(dir, 'none.sock'), timeoutMs: 1000 }));
    const e = errorOf((await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult);
    expect(e.error).toBe('daemon_unavailable');
    expect(e.message).toContain('svc start');
  });

  it('a daemon that never answers: daemon_timeout at the deadline, for every kind of tool', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-mcp-'));
    const path = join(dir, 'stalled.sock');
    const sockets: Socket[] = [];
    const stalled: Server = createServer((s) => sockets.push(s)); // accepts, reads, never writes
    await new Promise<void>((r) => stalled.listen(path, r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          for (const s of sockets) s.destroy();
          stalled.close(() => r());
        }),
    );
    const client = await connected(new DaemonClient({ socketPath: path, timeoutMs: 50 }));
    for (const [name, args] of [
      ['whoami', {}],
      ['list_inbox', {}],
      ['send_message', { to: 'bob', content: 'hi' }],
      ['list_contacts', {}],
    ] as const) {
      const e = errorOf((await client.callTool({ name, arguments: args })) as CallToolResult);
      expect(e.error, name).toBe('daemon_timeout');
    }
  });
});
