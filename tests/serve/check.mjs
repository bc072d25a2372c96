// The serve tests' runner: one named check, reported "ok" or "FAIL" with its stack; a failure
// sets the exit code and the next check still runs.
export async function check(name, fn) {
  try {
    await fn();
    console.log(`ok: ${name}`);
  } catch (e) {
    console.log(`FAIL: ${name}\n${e.stack}`);
    process.exitCode = 1;
  }
}
