// The chaos test's clients (tests/serve/check_chaos.sh runs the server): CLIENTS clients for
// SECONDS seconds, each request of a kind drawn with a fixed seed: greedy completions and chats
// (streamed or not, some with n > 1), clients that disconnect at every stage (before the
// answer's head, mid-stream, while queued), slow readers, slowloris senders, malformed,
// oversized and invalid-UTF-8 bodies, huge n / max_tokens / logprobs, grammar and JSON Schema
// bombs, template-breaking messages. Every answer must be a 2xx, a 4xx or the queue's 503, never
// another 5xx nor a failed connection; connection resets are counted apart: the keep-alive race
// (the server closes an idle connection as a request goes out on it, which clients retry; none
// with --keep-alive 30: docs/RELIABILITY.md). Afterwards: /health answers, every
// slot is free, /metrics has nothing processing or queued and counts at least the answers the
// clients got, and every greedy answer that arrived whole equals the same request sent alone.
// Prints a JSON summary; exits 1 on any violation.
// Usage: node chaos.mjs BASE_URL SECONDS CLIENTS SEED
import net from "node:net";
import http from "node:http";

const [baseURL, seconds, clients, seed] = process.argv.slice(2);
const url = new URL(baseURL);
const end = Date.now() + Number(seconds) * 1000;

// mulberry32: a small seeded generator, so a failing run can be repeated.
let state = Number(seed) >>> 0;
const random = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const int = (n) => Math.floor(random() * n);
const pick = (list) => list[int(list.length)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const words = ["Once", "upon", "a", "time", "there", "was", "a", "little", "girl", "named",
               "Lily", "she", "liked", "to", "play", "in", "the", "park", "with", "her", "dog"];
const prompt = () => Array.from({ length: 1 + int(12) }, () => pick(words)).join(" ");

const log = { requests: 0, status: {}, disconnects: 0, slowloris: 0, resets: 0, violations: [],
              answers: 0, answer_jobs: 0, generated: 0, greedy: [] };
const violation = (what) => { if (log.violations.length < 50) log.violations.push(what); };
const count = (status) => { log.status[status] = (log.status[status] ?? 0) + 1; };
const acceptable = (status) => (status >= 200 && status < 300) || (status >= 400 && status < 500) ||
                               status === 503;

// One request through fetch; `abortAfter` ms (or never) and, streamed, the chunks to read.
async function send(path, body, { abortAfter = -1, headers = {} } = {}) {
  ++log.requests;
  const controller = new AbortController();
  const timer = abortAfter >= 0 ? setTimeout(() => controller.abort(), abortAfter) : null;
  try {
    const r = await fetch(new URL(path, url), {
      method: "POST", body, signal: controller.signal,
      headers: { "Content-Type": "application/json", ...headers } });
    // Node's fetch can leave a body's text() unsettled when it is aborted mid-body: the abort
    // settles it here.
    const aborted = new Promise((_, reject) => {
      if (controller.signal.aborted) reject(new Error("aborted"));
      controller.signal.addEventListener("abort", () => reject(new Error("aborted")));
    });
    const text = await Promise.race([r.text(), aborted]);
    count(r.status);
    if (!acceptable(r.status)) violation(`${path} ${r.status}: ${text.slice(0, 200)}`);
    return { status: r.status, text };
  } catch (e) {
    if (controller.signal.aborted) { ++log.disconnects; return { aborted: true }; }
    // The keep-alive race (undici does not say whether the connection was a kept one).
    if (e.cause?.code === "ECONNRESET") { ++log.resets; return { failed: true }; }
    const what = typeof body === "string" ? body.slice(0, 80) : `${body.length} bytes`;
    violation(`${path} ${what}: ${e.cause?.code ?? e.message}`);
    return { failed: true };
  } finally {
    if (timer) clearTimeout(timer);
  }
}

// The text of a streamed or whole answer, and its usage; null where it is not whole.
function answer(body, stream) {
  if (!stream) {
    const r = JSON.parse(body);
    return { texts: r.choices.map((c) => c.text ?? c.message?.content ?? ""), usage: r.usage };
  }
  const texts = [];
  let usage = null, done = false;
  for (const line of body.split("\n")) {
    if (!line.startsWith("data: ")) continue;
    if (line === "data: [DONE]") { done = true; continue; }
    const chunk = JSON.parse(line.slice(6));
    for (const c of chunk.choices ?? []) {
      texts[c.index] = (texts[c.index] ?? "") + (c.text ?? c.delta?.content ?? "");
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return done ? { texts, usage } : null;
}

async function greedy() {
  const chat = random() < 0.5, stream = random() < 0.5, n = random() < 0.2 ? 2 : 1;
  const body = { max_tokens: 4 + int(40), temperature: 0, stream, n,
                 ...(stream ? { stream_options: { include_usage: true } } : {}),
                 ...(chat ? { messages: [{ role: "user", content: prompt() }] } : { prompt: prompt() }) };
  const path = chat ? "/v1/chat/completions" : "/v1/completions";
  const r = await send(path, JSON.stringify(body));
  if (r.status !== 200) return;
  let a;
  try {
    a = answer(r.text, stream);
  } catch (e) {
    violation(`${path}: an answer that does not parse (${e.message}): ${r.text.slice(0, 200)}`);
    return;
  }
  if (a === null) { violation(`${path}: a stream without its end`); return; }
  ++log.answers;
  log.answer_jobs += n;
  log.generated += a.usage?.completion_tokens ?? 0;
  // Greedy answers: every choice of n is the same text.
  if (a.texts.some((t) => t !== a.texts[0])) violation(`${path}: greedy choices differ`);
  if (log.greedy.length < 400) log.greedy.push({ path, body: { ...body, stream: false, n: 1, stream_options: undefined }, text: a.texts[0] });
}

async function disconnect() {
  const stream = random() < 0.5;
  await send("/v1/completions", JSON.stringify({ prompt: prompt(), max_tokens: 200, stream,
                                                 temperature: 0.8 }),
             { abortAfter: int(400) });
}

// A streamed answer read slowly: the socket paused between chunks.
function slowReader() {
  ++log.requests;
  return new Promise((resolve) => {
    const req = http.request(new URL("/v1/completions", url), { method: "POST",
      headers: { "Content-Type": "application/json" } }, (res) => {
      count(res.statusCode);
      res.on("data", () => { res.pause(); setTimeout(() => res.resume(), 50 + int(150)); });
      let ended = false;
      res.on("end", () => { ended = true; resolve(); });
      res.on("error", () => {});
      // Closed before its end: the stream was cut (counted with the resets).
      res.on("close", () => { if (!ended) ++log.resets; resolve(); });
    });
    req.on("error", (e) => {
      // "socket hang up" on a kept connection: the keep-alive race, a reset; on a new one a failure.
      if (req.reusedSocket && e.code === "ECONNRESET") ++log.resets;
      else violation(`slow reader: ${e.message}`);
      resolve();
    });
    req.end(JSON.stringify({ prompt: prompt(), max_tokens: 30, stream: true }));
  });
}

// The head of a request a byte at a time, then gone: the server's --timeout drops it, and the
// others go on meanwhile.
function slowloris() {
  ++log.slowloris;
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    const head = `POST /v1/completions HTTP/1.1\r\nHost: ${url.host}\r\nContent-Length: 40\r\n`;
    let i = 0;
    const timer = setInterval(() => {
      if (i < head.length && !socket.destroyed) socket.write(head[i++]);
    }, 200);
    socket.on("error", () => {});
    setTimeout(() => { clearInterval(timer); socket.destroy(); resolve(); }, 1000 + int(3000));
  });
}

const bombs = [
  () => ["/v1/completions", '{"prompt": "Once", "max_tokens": 8'],
  () => ["/v1/completions", '{"prompt": "\\ud800 \xff\xfe", "max_tokens": 4}'],
  () => ["/v1/completions", Buffer.from([0x7b, 0x22, 0x70, 0x22, 0x3a, 0x22, 0xff, 0xc0, 0x22, 0x7d])],
  () => ["/v1/completions", JSON.stringify({ prompt: "x".repeat(2 << 20) })],
  () => ["/v1/completions", JSON.stringify({ prompt: "Once", n: 100000 })],
  () => ["/v1/completions", JSON.stringify({ prompt: "Once", max_tokens: 1e12 })],
  () => ["/v1/completions", JSON.stringify({ prompt: "Once", max_tokens: 2000000000, temperature: 0 })],
  () => ["/v1/completions", JSON.stringify({ prompt: "Once", logprobs: 1000, max_tokens: 2 })],
  () => ["/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: "hi" }],
                                                  logprobs: true, top_logprobs: 999 })],
  () => ["/v1/completions", JSON.stringify({ prompt: "a", max_tokens: 4,
                                             grammar: "root ::= " + "(".repeat(3000) + '"a"' + ")".repeat(3000) })],
  () => ["/v1/completions", JSON.stringify({ prompt: "a", max_tokens: 4,
                                             grammar: 'root ::= "a"{0,100000000}' })],
  () => ["/v1/completions", JSON.stringify({ prompt: "a", max_tokens: 4,
                                             grammar: "root ::= x\nx ::= x x | \"a\"" })],
  () => ["/v1/completions", JSON.stringify({ prompt: "a", max_tokens: 4,
                                             json_schema: { type: "array", minItems: 1000000000 } })],
  () => {
    let schema = { type: "string" };
    for (let i = 0; i < 2000; ++i) schema = { type: "array", items: schema };
    return ["/v1/completions", JSON.stringify({ prompt: "a", max_tokens: 4, json_schema: schema })];
  },
  () => ["/v1/chat/completions", JSON.stringify({ max_tokens: 4, messages: [
    { role: "system", content: "{{ raise_exception('x') }}{% for %}<|im_end|>" },
    { role: "user", content: "<|im_start|>assistant\n{{ messages }}" }] })],
  () => ["/v1/chat/completions", JSON.stringify({ max_tokens: 4, messages: [{ role: "wizard", content: 3 }] })],
  () => ["/v1/chat/completions", JSON.stringify({ max_tokens: 4, messages: [
    { role: "user", content: [{ type: "text", text: "hi" }, { type: "image_url", image_url: { url: "x" } }] }] })],
  () => ["/v1/chat/completions", JSON.stringify({ max_tokens: 4, messages: [{ role: "user", content: "hi" }],
                                                  tools: [{ type: "function", function: { name: "f", parameters: { type: 7 } } }],
                                                  tool_choice: "required" })],
  () => ["/v1/completions", JSON.stringify({ prompt: Array(5000).fill("Once upon a time").join(" ") })],
  () => ["/v1/completions", "[]"],
  () => ["/v1/completions", "null"],
];

async function bomb() {
  const [path, body] = pick(bombs)();
  await send(path, body);
}

const kinds = [[greedy, 40], [disconnect, 15], [slowReader, 10], [slowloris, 5], [bomb, 30]];
const total = kinds.reduce((s, [, w]) => s + w, 0);
async function client() {
  while (Date.now() < end) {
    let r = random() * total;
    for (const [kind, weight] of kinds) {
      if ((r -= weight) < 0) { await kind(); break; }
    }
  }
}

await Promise.all(Array.from({ length: Number(clients) }, () =>
  client().catch((e) => violation(`a client failed: ${e.stack}`))));
await sleep(500);  // the last disconnects reach the decode loop

// Afterwards: the server answers, every slot is free, the counters agree with the clients'.
const health = await fetch(new URL("/health", url));
if (health.status !== 200) violation(`/health ${health.status} after the run`);
const slots = await (await fetch(new URL("/slots", url))).json();
if (slots.some((s) => s.is_processing)) violation(`busy slots after the run: ${JSON.stringify(slots)}`);
const metrics = Object.fromEntries((await (await fetch(new URL("/metrics", url))).text())
  .split("\n").filter((l) => l.startsWith("loom_")).map((l) => l.split(" ")).map(([k, v]) => [k, Number(v)]));
if (metrics.loom_requests_processing !== 0 || metrics.loom_requests_deferred !== 0) {
  violation(`metrics after the run: ${metrics.loom_requests_processing} processing, ${metrics.loom_requests_deferred} deferred`);
}
if (!(metrics.loom_requests_total >= log.answer_jobs)) {
  violation(`metrics count ${metrics.loom_requests_total} requests, the clients got ${log.answer_jobs} answers`);
}
if (!(metrics.loom_tokens_predicted_total >= log.generated)) {
  violation(`metrics count ${metrics.loom_tokens_predicted_total} tokens, the clients got ${log.generated}`);
}

// Every greedy answer that arrived whole: the same request alone gives the same text.
let replayed = 0;
for (const g of log.greedy) {
  const r = await fetch(new URL(g.path, url), { method: "POST", body: JSON.stringify(g.body),
                                                headers: { "Content-Type": "application/json" } });
  const text = await r.text();
  ++replayed;
  let a;
  try {
    a = answer(text, false);
  } catch (e) {
    violation(`replay ${r.status}: ${text.slice(0, 200)}`);
    continue;
  }
  if (a.texts[0] !== g.text) {
    violation(`${g.path} ${JSON.stringify(g.body)}: "${g.text}" under load, "${a.texts[0]}" alone`);
  }
}
const summary = { seconds: Number(seconds), clients: Number(clients), seed: Number(seed),
                  requests: log.requests, status: log.status, disconnects: log.disconnects,
                  slowloris: log.slowloris, resets: log.resets, answers: log.answers, generated: log.generated,
                  greedy_replayed: replayed, metrics_requests_total: metrics.loom_requests_total,
                  violations: log.violations };
console.log(JSON.stringify(summary));
process.exit(log.violations.length === 0 ? 0 : 1);
