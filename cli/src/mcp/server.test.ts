/**
 * Tool errors and deadlines without a healthy daemon: a socket nobody listens on is
 * daemon_unavailable; a daemon that accepts and never answers is daemon_timeout after the
 * client's deadline. Either way the tool answers with an MCP tool error, never hangs.
 * Input the schema refuses never reaches the daemon: it is a validation_failed tool error
 * on one line, like every other failure. The schemas a model reads describe every field.
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { DaemonClient } from '@svc/daemon/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createSvcMcp, MAX_CONTENT_BYTES } from './server.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function connected(daemon: DaemonClient): Promise<Client> {
  const server = createSvcMcp({ client: daemon, sender: daemon, agent: 'alice' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.mcp.connect(a);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(b);
  cleanups.push(() => client.close());
  return client;
}

/** A daemon client of a socket nobody listens on. */
const nowhere = () =>
  new DaemonClient({ socketPath: join(mkdtempSync(join(tmpdir(), 'svc-mcp-')), 'none.sock'), timeoutMs: 1000 });

/** What a request that must fail was refused with (undefined if it succeeded). */
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  ) as Promise<McpError>;

const errorOf = (r: CallToolResult) => {
  expect(r.isError).toBe(true);
  return JSON.parse((r.content[0] as { text: string }).text) as { error: string; message: string };
};

describe('svc mcp without a healthy daemon', () => {
  it('no daemon: daemon_unavailable, with the command that starts it', async () => {
    const client = await connected(nowhere());
    const e = errorOf((await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult);
    expect(e.error).toBe('daemon_unavailable');
    expect(e.message).toContain('svc start');
  });

  it('a resource read without a daemon: a JSON-RPC error carrying the project code, not a bare -32603', async () => {
    const client = await connected(nowhere());
    // the listing too (it was a bare -32603 saying to run `svc start`, in the foreground)
    const listed = await refusal(client.listResources());
    expect(listed).toBeInstanceOf(McpError);
    expect(listed.data).toEqual({
      uri: 'svc://conversations/',
      error: 'daemon_unavailable',
      message: expect.stringContaining('svc start'),
    });
    expect(listed.message).toContain('daemon_unavailable: ');
    for (const uri of ['svc://inbox', 'svc://conversations/bob']) {
      const err = await refusal(client.readResource({ uri }));
      expect(err, uri).toBeInstanceOf(McpError);
      expect(err.code, uri).toBe(ErrorCode.InternalError);
      expect(err.data, uri).toEqual({
        uri,
        error: 'daemon_unavailable',
        message: expect.stringContaining('svc start'),
      });
      expect(err.message, uri).toContain('daemon_unavailable: ');
    }
  });

  it('a subscription to a URI this server never updates is refused (it was accepted, and nothing ever came)', async () => {
    const client = await connected(nowhere());
    for (const uri of ['svc://nonsense', 'svc://conversations/', 'https://example.com/x']) {
      const err = await refusal(client.subscribeResource({ uri }));
      expect(err, uri).toBeInstanceOf(McpError);
      expect(err.code, uri).toBe(ErrorCode.InvalidParams);
      expect(err.data, uri).toMatchObject({ uri, error: 'validation_failed' });
    }
    await expect(client.subscribeResource({ uri: 'svc://inbox' })).resolves.toEqual({});
    await expect(client.subscribeResource({ uri: 'svc://conversations/dm%3Aalice%3Abob' })).resolves.toEqual({});
  });

  it('a conversation resource whose id is not percent-encoded UTF-8: invalid params with the code, not internal_error', async () => {
    const client = await connected(nowhere());
    const uri = 'svc://conversations/%E0%A4%A';
    const err = await refusal(client.readResource({ uri }));
    expect(err).toBeInstanceOf(McpError);
    expect(err.code).toBe(ErrorCode.InvalidParams);
    expect(err.data).toEqual({
      uri,
      error: 'validation_failed',
      message: `${uri} does not name a conversation: its id is not percent-encoded UTF-8`,
    });
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
    // a send past its deadline may have gone out: said so, with where to look, never "failed"
    for (const [name, args, where] of [
      ['send_message', { to: 'bob', content: 'hi' }, 'read_conversation with conversation "bob"'],
      ['reply', { message_id: 'm1', content: 'hi' }, 'read_conversation on the conversation of m1'],
    ] as const) {
      const e = errorOf((await client.callTool({ name, arguments: args })) as CallToolResult);
      expect(e.message, name).toContain('may have been sent or queued');
      expect(e.message, name).toContain(where);
    }
  });
});

describe('svc mcp input, as a model meets it', () => {
  it('input outside the schema: validation_failed, one line naming every bad field', async () => {
    const client = await connected(nowhere());
    for (const [name, args, fields] of [
      ['send_message', { to: 5, content: null, content_type: 'x' }, ['to:', 'content:', 'content_type:']],
      ['send_message', { to: 'bob' }, ['content:']],
      ['acknowledge', { message_ids: 'abc' }, ['message_ids:']],
      ['wait_for_messages', { timeout_seconds: 2.5 }, ['timeout_seconds:']],
      ['read_conversation', { conversation: 'bob', since: 'yesterday' }, ['since:']],
      // a misnamed argument is refused, not dropped for the default wait
      ['wait_for_messages', { timeout: 30 }, ['arguments: Unrecognized key: "timeout"']],
      ['send_message', { to: 'bob', content: 'hi', subject: 'x' }, ['"subject"']],
      // nothing to search for: said so, not answered with no messages
      ['search_messages', { query: '  ?! ' }, ['query: expected at least one word']],
      // checked before the daemon, whose refusal would name neither the tool nor the field
      ['send_message', { to: 'bob', content: '{"a": 1', content_type: 'structured' }, ['content: not JSON text']],
    ] as const) {
      const e = errorOf((await client.callTool({ name, arguments: args })) as CallToolResult);
      expect(e.error, name).toBe('validation_failed');
      expect(e.message, name).not.toContain('\n');
      expect(e.message.startsWith(`${name}: `), e.message).toBe(true);
      for (const f of fields) expect(e.message, name).toContain(f);
    }
    const unknown = errorOf((await client.callTool({ name: 'send_mail', arguments: {} })) as CallToolResult);
    expect(unknown).toEqual({ error: 'not_found', message: expect.stringContaining('send_mail') });
  });

  it('every input field is described; send_message offers no content type it cannot send', async () => {
    const client = await connected(nowhere());
    const { tools } = await client.listTools();
    for (const t of tools) {
      for (const [field, schema] of Object.entries(t.inputSchema.properties ?? {})) {
        expect((schema as { description?: string }).description, `${t.name}.${field}`).toBeTruthy();
      }
    }
    const send = tools.find((t) => t.name === 'send_message')!.inputSchema.properties as Record<
      string,
      { enum?: string[]; maxLength?: number; description: string }
    >;
    expect(send.content_type!.enum).toEqual(['text', 'structured']);
    expect(send.content!.maxLength).toBe(MAX_CONTENT_BYTES);
    expect(send.content!.description).toContain(`${MAX_CONTENT_BYTES} bytes`);
    for (const t of tools) expect(t.inputSchema.additionalProperties, t.name).toBe(false);
  });

  it('content larger than a message holds: envelope_too_large with the limit, before the daemon', async () => {
    const client = await connected(nowhere());
    // fewer characters than the limit, more UTF-8 bytes (4 each); and more characters than the
    // schema's length (it was validation_failed, naming the schema, not the limit)
    for (const content of ['😀'.repeat(MAX_CONTENT_BYTES / 4 + 1), 'x'.repeat(MAX_CONTENT_BYTES + 1)]) {
      for (const [name, args] of [
        ['send_message', { to: 'bob', content }],
        ['reply', { message_id: 'm1', content }],
      ] as const) {
        const e = errorOf((await client.callTool({ name, arguments: args })) as CallToolResult);
        expect(e.error, name).toBe('envelope_too_large');
        expect(e.message).toContain(`${Buffer.byteLength(content)} bytes`);
        expect(e.message).toContain('split it');
      }
    }
  });
});
