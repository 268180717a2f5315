/** The table that lets a run load only its own command module stays complete and true. */
import { describe, expect, it } from 'vitest';
import { App } from '../src/app.js';
import { COMMAND_MODULE, loadCommands, loadModule, MODULE_NAMES } from '../src/command-modules.js';
import { buildProgram } from '../src/program.js';

const app = () => new App({ env: {}, stdout: { write() {} }, stderr: { write() {} } });

describe('the command module table', () => {
  it('names every top-level command, each with the module that defines it', async () => {
    const a = app();
    const defined = new Map<string, string>();
    for (const m of MODULE_NAMES) for (const c of await loadModule(m, a)) defined.set(c.name(), m);
    expect(Object.fromEntries(defined)).toEqual(COMMAND_MODULE);
    const program = await buildProgram(a);
    expect(program.commands.map((c) => c.name()).sort()).toEqual(Object.keys(COMMAND_MODULE).sort());
  });

  it('a known word loads just its command; an unknown word or none loads them all', async () => {
    expect((await loadCommands(app(), 'send')).map((c) => c.name())).toEqual(['send']);
    expect((await loadCommands(app(), 'deployment')).map((c) => c.name())).toEqual(['deployment']);
    const all = Object.keys(COMMAND_MODULE).length;
    expect(await loadCommands(app(), 'sedn')).toHaveLength(all);
    expect(await loadCommands(app(), undefined)).toHaveLength(all);
    expect(await loadCommands(app(), 'toString')).toHaveLength(all);
  });
});
