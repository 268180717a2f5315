import { describe, expect, it } from 'vitest';
import { savedText } from './attachment.js';
import { progressLine } from './progress.js';

// the peer chose the attachment's name (shown in the progress bar and, cleaned, in the
// path) and its media type: on a terminal they are text, never an escape sequence
describe('what the CLI shows of an attachment', () => {
  const osc52 = '\u001b]52;c;ZXZpbA==\u0007';

  it('the saved line prints the path and media type as text', () => {
    const line = savedText({ path: `/tmp/x/a\u009b2Jb.txt`, size: 3, media_type: osc52 });
    for (const c of ['\u001b', '\u0007', '\u009b']) expect(line).not.toContain(c);
    expect(line).toBe('saved /tmp/x/a\\x9b2Jb.txt (3 bytes, \\x1b]52;c;ZXZpbA==\\x07)\n');
    expect(savedText({ path: '/d/f', size: 1, media_type: 'text/plain', already_saved: true })).toBe(
      'already saved /d/f (1 bytes, text/plain)\n',
    );
  });

  it('the progress bar prints the name as text', () => {
    const line = progressLine(`report${osc52}\u202efdp.exe`, 'download', 1, 2, 4);
    for (const c of ['\u001b', '\u0007', '\u202e']) expect(line).not.toContain(c);
    expect(line).toContain('report\\x1b]52;c;ZXZpbA==\\x07\\u202efdp.exe');
  });
});
