// Load on a running loom serve: N clients stream completions for S seconds, a fifth of them
// leaving mid-answer; prints requests/s, tokens/s, time to first token and inter-token latency
// (p50 / p99), and the status codes seen, as JSON.
// Usage: node loadtest.mjs BASE_URL SECONDS CLIENTS
const [baseURL, seconds, clients] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const prompts = ["Once upon a time", "The little dog", "In a big forest", "She looked at the sky",
                 "Tom and his friend", "The rain fell", "A tiny mouse", "Every morning"];
const deadline = Date.now() + seconds * 1000;
const ttft = [], gaps = [], statuses = {};
let requests = 0, tokens = 0, disconnects = 0, errors = 0;

function percentile(values, p) {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

async function client(id) {
  let n = id;
  while (Date.now() < deadline) {
    n = (n * 1103515245 + 12345) & 0x7fffffff;  // a small LCG: runs repeat
    const leave = n % 5 === 0 ? 1 + (n % 7) : -1;  // chunks to read before leaving, or never
    const abort = new AbortController();
    const start = performance.now();
    let last = start, chunks = 0;
    try {
      const r = await fetch(`${baseURL}/v1/completions`, {
        method: "POST", signal: abort.signal, headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ prompt: prompts[n % prompts.length], max_tokens: 16 + (n % 48),
                               temperature: 0.8, seed: n, stream: true }) });
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      ++requests;
      if (r.status !== 200) {
        await r.text();
        if (r.status === 503) await new Promise((ok) => setTimeout(ok, 100));
        continue;
      }
      const reader = r.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const now = performance.now();
        const events = new TextDecoder().decode(value).split("\n\n").filter((e) => e.startsWith("data: {"));
        for (const _ of events) {
          if (chunks === 0) ttft.push(now - start); else gaps.push(now - last);
          last = now;
          ++chunks;
          ++tokens;
        }
        if (leave > 0 && chunks >= leave) {
          abort.abort();
          ++disconnects;
          break;
        }
      }
    } catch (e) {
      if (e.name !== "AbortError") { ++errors; console.error(e.message); }
    }
  }
}

const t0 = performance.now();
await Promise.all(Array.from({ length: clients }, (_, i) => client(i + 1)));
const elapsed = (performance.now() - t0) / 1000;
console.log(JSON.stringify({
  seconds: elapsed, clients, requests, requests_per_s: requests / elapsed, tokens,
  tokens_per_s: tokens / elapsed, disconnects, client_errors: errors, statuses,
  ttft_ms: { p50: percentile(ttft, 0.5), p99: percentile(ttft, 0.99) },
  inter_token_ms: { p50: percentile(gaps, 0.5), p99: percentile(gaps, 0.99) },
}));
