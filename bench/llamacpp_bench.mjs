// llama.cpp's side of bench/compare-llamacpp: prompt (pp) and generation (tg) speed of one GGUF
// file through node-llama-cpp's prebuilt CPU libraries, measured the way llama-bench measures:
// pp = one evaluation of N random tokens in one batch, tg = N single-token decodes after BOS.
// Usage: node llamacpp_bench.mjs NODE_LLAMA_CPP_DIR MODEL THREADS N_PROMPT N_GEN REPETITIONS FLASH
// Prints one JSON line: {"pp": [tokens/s per repetition], "tg": [...], "cpu": "<variant>"}.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dir, modelPath, threadsArg, promptArg, genArg, repsArg, flashArg] = process.argv.slice(2);
const threads = Number(threadsArg), nPrompt = Number(promptArg), nGen = Number(genArg);
const reps = Number(repsArg);
const { getLlama, LlamaLogLevel } =
    await import(pathToFileURL(path.join(dir, "dist", "index.js")).href);

const llama = await getLlama({ gpu: false, build: "never", usePrebuiltBinaries: true,
                               progressLogs: false, logLevel: LlamaLogLevel.error,
                               maxThreads: threads });
const model = await llama.loadModel({ modelPath, gpuLayers: 0, useMmap: true });
const context = await model.createContext({
  contextSize: Math.max(nPrompt, nGen) + 16, batchSize: Math.max(nPrompt, 1), sequences: 1,
  threads, flashAttention: flashArg === "1", ignoreMemorySafetyChecks: true });
const sequence = context.getSequence();
const bos = model.tokens.bos ?? 1;

// Random prompt tokens from a fixed linear congruential sequence: the speed does not depend on
// which tokens they are, only that the run is repeatable.
const nVocab = model.fileInsights.tokens ?? 32000;
let state = 12345;
const prompt = [bos];
while (prompt.length < nPrompt) {
  state = (state * 1103515245 + 12345) % 2147483648;
  prompt.push(state % nVocab);
}

async function timed(run) {
  await sequence.clearHistory();
  const start = performance.now();
  await run();
  return (performance.now() - start) / 1000;
}
const promptOnce = () => timed(() => sequence.controlledEvaluate(
    prompt.map((t, i) => (i + 1 === prompt.length ? [t, { generateNext: { token: true } }] : t))));
const generateOnce = () => timed(async () => {
  let n = 0;
  for await (const _ of sequence.evaluate([bos], { temperature: 0, yieldEogToken: true })) {
    if (++n >= nGen) break;
  }
});

const result = { pp: [], tg: [], cpu: llama.cpuVariant ?? null };
for (const [test, once, n] of [["pp", promptOnce, nPrompt], ["tg", generateOnce, nGen]]) {
  if (n <= 0) continue;
  await once();  // warm-up, as llama-bench does
  for (let r = 0; r < reps; ++r) result[test].push(n / await once());
}
console.log(JSON.stringify(result));
await context.dispose();
await model.dispose();
await llama.dispose();
