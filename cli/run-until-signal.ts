/**
 * Keeps a long-running command alive until SIGINT or SIGTERM, then runs the one
 * shutdown path; a second signal exits at once.
 */
export function runUntilSignal(stop: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) process.exit(130);
      stopping = true;
      process.stderr.write(`\n${signal}: shutting down…\n`);
      stop().then(
        () => resolve(),
        (err: unknown) => {
          process.stderr.write(`shutdown failed: ${String(err)}\n`);
          process.exitCode = 1;
          resolve();
        },
      );
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}
