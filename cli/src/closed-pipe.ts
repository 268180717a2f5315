/**
 * `svc … | head`: a reader that stops early closes the pipe, and the next write fails with
 * EPIPE. Like any Unix tool, the command then ends quietly instead of printing a stack.
 */
export function endQuietlyOnClosedPipe(stream: NodeJS.WriteStream = process.stdout): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}
