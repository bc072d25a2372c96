// loom serve through the official openai client: completions and chat, streamed and not, equal
// to `loom run`'s greedy output; `n` answers; 8 concurrent clients on 4 slots answered as if alone; a client
// that leaves mid-stream frees its slot; errors in OpenAI's shape; 30 hostile bodies.
// Usage: node openai_test.mjs LOOM MODEL BASE_URL   (a server on MODEL already at BASE_URL)
import { execFileSync } from "node:child_process";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { check } from "./check.mjs";

const [loom, modelPath, baseURL] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: "unused", maxRetries: 0 });
const model = "stories260K.gguf";

// `loom run`'s greedy continuation of `prompt`: its output less the echoed prompt.
function loomRun(prompt, n) {
  const run = (k) =>
    execFileSync(loom, ["run", "-m", modelPath, "-p", prompt, "-n", String(k), "--temp", "0",
                        "-c", "512"], { stdio: ["ignore", "pipe", "ignore"] }).toString();
  const echo = run(0).replace(/\n$/, "");
  const full = run(n).replace(/\n$/, "");
  assert.ok(full.startsWith(echo), "loom run echoes its prompt");
  return full.slice(echo.length);
}

async function completionText(prompt, n, stream) {
  const params = { model, prompt, max_tokens: n, temperature: 0 };
  if (!stream) return (await client.completions.create(params)).choices[0].text;
  let text = "";
  let finish = null;
  for await (const chunk of await client.completions.create({ ...params, stream: true })) {
    text += chunk.choices[0].text;
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  assert.equal(finish, "length");
  return text;
}

async function metric(name) {
  const text = await (await fetch(`${baseURL}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`loom_${name} `));
  return Number(line.split(" ")[1]);
}

await check("models", async () => {
  const list = await client.models.list();
  assert.equal(list.data[0].id, model);
});

await check("completions equal loom run, streamed or not", async () => {
  const want = loomRun("Once upon a time", 24);
  assert.ok(want.length > 20, want);
  assert.equal(await completionText("Once upon a time", 24, false), want);
  assert.equal(await completionText("Once upon a time", 24, true), want);
  const full = await client.completions.create({ model, prompt: "The cat", max_tokens: 5,
                                                 temperature: 0 });
  assert.equal(full.object, "text_completion");
  assert.equal(full.usage.completion_tokens, 5);
  assert.equal(full.usage.total_tokens, full.usage.prompt_tokens + 5);
  // llama-server's timings beside the usage: the same counts, rates from the same clocks.
  const t = full.timings;
  assert.equal(t.predicted_n, 5);
  assert.equal(t.prompt_n + t.cache_n, full.usage.prompt_tokens);
  assert.equal(t.cache_n, full.usage.prompt_tokens_details.cached_tokens);
  assert.ok(t.prompt_ms > 0 && t.predicted_ms > 0);
  assert.ok(Math.abs(t.predicted_per_second - 1000 * 5 / t.predicted_ms) < 1e-6 * t.predicted_per_second);
});

await check("chat equals loom run on the rendered prompt, streamed or not", async () => {
  const messages = [{ role: "system", content: "You tell stories." },
                    { role: "user", content: "Tell me about a cat." }];
  const rendered = "<|im_start|>system\nYou tell stories.<|im_end|>\n" +
                   "<|im_start|>user\nTell me about a cat.<|im_end|>\n<|im_start|>assistant\n";
  const want = loomRun(rendered, 16);
  const answer = await client.chat.completions.create({ model, messages, max_tokens: 16,
                                                        temperature: 0 });
  assert.equal(answer.object, "chat.completion");
  assert.equal(answer.choices[0].message.role, "assistant");
  assert.equal(answer.choices[0].message.content, want);
  let streamed = "";
  let role = null;
  for await (const chunk of await client.chat.completions.create(
      { model, messages, max_tokens: 16, temperature: 0, stream: true })) {
    role = chunk.choices[0].delta.role ?? role;
    streamed += chunk.choices[0].delta.content ?? "";
  }
  assert.equal(role, "assistant");
  assert.equal(streamed, want);
});

await check("logprobs", async () => {
  const answer = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Hi" }], max_tokens: 4, temperature: 0,
    logprobs: true, top_logprobs: 3 });
  const content = answer.choices[0].logprobs.content;
  assert.equal(content.length, 4);
  for (const t of content) {
    assert.equal(t.top_logprobs.length, 3);
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs[0].logprob, t.logprob);  // greedy takes the most likely
  }
});

await check("stream_options.include_usage: a last chunk of no choices with the usage", async () => {
  const chunks = [];
  for await (const chunk of await client.chat.completions.create({
      model, messages: [{ role: "user", content: "Hi" }], max_tokens: 6, temperature: 0,
      stream: true, stream_options: { include_usage: true } })) {
    chunks.push(chunk);
  }
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 6);
  assert.equal(chunks[chunks.length - 2].timings.predicted_n, 6);  // on the answer's last chunk
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + 6);
  assert.equal(chunks[chunks.length - 2].choices[0].finish_reason, "length");
});

// Greedy, the first token with a bias of -100 (or banned, llama-server's false) gives way to the
// one ranked second without it, and a bias of +100 on the third makes it first. A piece's id is
// the token the prompt's tokens gain when the piece is appended to its text.
await check("logit_bias", async () => {
  const prompt = "Once upon a time";
  const ask = async (extra) => (await client.completions.create({
    model, prompt, max_tokens: 1, temperature: 0, logprobs: 3, ...extra })).choices[0].logprobs;
  const plain = await ask({});
  const ranked = Object.entries(plain.top_logprobs[0]).sort((a, b) => b[1] - a[1]).map((e) => e[0]);
  assert.equal(ranked[0], plain.tokens[0]);
  const tokenize = async (content) => (await (await fetch(`${baseURL}/tokenize`, {
    method: "POST", body: JSON.stringify({ content, parse_special: false }) })).json()).tokens;
  const base = await tokenize(prompt);
  const idOf = async (piece) => {
    const t = await tokenize(prompt + piece);
    assert.deepEqual(t.slice(0, -1), base, `"${piece}" appended keeps the prompt's tokens`);
    return t[t.length - 1];
  };
  const [first, third] = [await idOf(ranked[0]), await idOf(ranked[2])];
  assert.equal((await ask({ logit_bias: { [first]: -100 } })).tokens[0], ranked[1]);
  assert.equal((await ask({ logit_bias: [[first, false]] })).tokens[0], ranked[1]);
  assert.equal((await ask({ logit_bias: { [third]: 100 } })).tokens[0], ranked[2]);
  await assert.rejects(ask({ logit_bias: { 999999: 1 } }),
                       (e) => e.status === 400 && /vocabulary has/.test(e.message));
});

await check("typical_p and n_probs are taken", async () => {
  const answer = await client.completions.create({
    model, prompt: "The cat", max_tokens: 3, temperature: 0.8, seed: 3, typical_p: 0.5,
    n_probs: 2 });
  assert.equal(answer.choices[0].logprobs.tokens.length, 3);
  for (const top of answer.choices[0].logprobs.top_logprobs) assert.equal(Object.keys(top).length, 2);
});

await check("n answers: each seeded draw as alone, greedy ones alike, streamed or not", async () => {
  const params = { model, prompt: "Once upon a time", max_tokens: 12, temperature: 1, seed: 11 };
  const three = await client.completions.create({ ...params, n: 3 });
  assert.deepEqual(three.choices.map((c) => c.index), [0, 1, 2]);
  // Answer i draws with seed + i: the same as a request of its own with that seed.
  for (const i of [0, 1, 2]) {
    const alone = await client.completions.create({ ...params, seed: 11 + i });
    assert.equal(three.choices[i].text, alone.choices[0].text, `answer ${i}`);
    assert.equal(three.choices[i].finish_reason, "length");
  }
  assert.equal(three.usage.completion_tokens, 36);
  assert.equal(three.usage.total_tokens, three.usage.prompt_tokens + 36);
  const greedy = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Hi" }], max_tokens: 8, temperature: 0, n: 2 });
  assert.equal(greedy.choices.length, 2);
  assert.equal(greedy.choices[0].message.content, greedy.choices[1].message.content);
  const texts = ["", ""], finishes = [null, null];
  let usage = null;
  for await (const chunk of await client.completions.create({
      ...params, n: 2, stream: true, stream_options: { include_usage: true } })) {
    for (const c of chunk.choices) {
      texts[c.index] += c.text;
      finishes[c.index] = c.finish_reason ?? finishes[c.index];
    }
    usage = chunk.usage ?? usage;
  }
  assert.deepEqual(texts, three.choices.slice(0, 2).map((c) => c.text));
  assert.deepEqual(finishes, ["length", "length"]);
  assert.equal(usage.completion_tokens, 24);
});

await check("8 concurrent clients on 4 slots answer as if alone", async () => {
  const prompts = ["Once upon a time", "The cat", "Lily and Tom", "One day, a big dog",
                   "The sun was", "Sara had a", "In the park", "A little bird"];
  const alone = [];
  for (const p of prompts) alone.push(await completionText(p, 32, false));
  const together = await Promise.all(prompts.map((p, i) => completionText(p, 32, i % 2 === 1)));
  assert.deepEqual(together, alone);
});

// After a client left: within 2 s no request holds a slot, and the cancelled one (which asked
// for maxTokens) stopped before its end; `before` is tokens_predicted_total before it began.
async function expectSlotFreed(before, maxTokens) {
  let processing = 1;
  for (let i = 0; i < 40 && processing > 0; ++i) {
    await new Promise((r) => setTimeout(r, 50));
    processing = await metric("requests_processing");
  }
  assert.equal(processing, 0, "the slot is still busy");
  const generated = (await metric("tokens_predicted_total")) - before;
  assert.ok(generated < maxTokens, `the cancelled request ran to its end (${generated} tokens)`);
}

await check("a client leaving mid-stream frees its slot", async () => {
  const before = await metric("tokens_predicted_total");
  const abort = new AbortController();
  const response = await fetch(`${baseURL}/v1/completions`, {
    method: "POST", signal: abort.signal, headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ prompt: "Once upon a time", max_tokens: 400, temperature: 0,
                           stream: true }) });
  const reader = response.body.getReader();
  await reader.read();
  abort.abort();
  await expectSlotFreed(before, 400);
  assert.equal((await completionText("The cat", 4, false)).length > 0, true);
});

await check("a client leaving a non-streamed request frees its slot", async () => {
  const before = await metric("tokens_predicted_total");
  const abort = new AbortController();
  const pending = fetch(`${baseURL}/v1/completions`, {
    method: "POST", signal: abort.signal, headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ prompt: "Once upon a time", max_tokens: 480, temperature: 0 }) }).catch((e) => e);
  for (let i = 0; i < 200 && (await metric("requests_processing")) === 0; ++i) {
    await new Promise((r) => setTimeout(r, 2));
  }
  abort.abort();
  assert.equal((await pending).name, "AbortError");
  await expectSlotFreed(before, 480);
});

async function status(path, init) {
  const r = await fetch(`${baseURL}${path}`, init);
  const body = await r.text();
  return { code: r.status, body: body ? JSON.parse(body) : null };
}
const post = (body) => ({ method: "POST", headers: { "Content-Type": "application/json" },
                          body });

await check("errors are 4xx in OpenAI's shape and the server lives on", async () => {
  let r = await status("/v1/completions", post("{not json"));
  assert.equal(r.code, 400);
  assert.match(r.body.error.message, /not valid JSON/);
  r = await status("/v1/completions", post(JSON.stringify({ prompt: "a", temperature: "x" })));
  assert.equal(r.code, 400);
  assert.equal(r.body.error.param, "temperature");
  r = await status("/v1/completions", post(JSON.stringify({ prompt: "a ".repeat(600) })));
  assert.equal(r.code, 400);
  assert.match(r.body.error.message, /the prompt has \d+ tokens; a slot holds 512/);
  r = await status("/no/such/route");
  assert.equal(r.code, 404);
  assert.equal(r.body.error.type, "not_found_error");
  r = await status("/v1/completions", post(JSON.stringify({ prompt: "x".repeat(2 << 20) })));
  assert.equal(r.code, 413);
  r = await status("/detokenize", post(JSON.stringify({ tokens: [1, 99999] })));
  assert.equal(r.code, 400);
  const tokens = (await status("/tokenize", post(JSON.stringify({ content: "Once upon" })))).body;
  assert.deepEqual(tokens.tokens, [403, 407]);
  const text = (await status("/detokenize", post(JSON.stringify({ tokens: [403, 407] })))).body;
  assert.equal(text.content, "Once upon");
  assert.equal((await status("/health")).code, 200);
  assert.equal(await metric("requests_processing"), 0);
});

await check("30 hostile bodies each get a 4xx and the server keeps serving", async () => {
  const big = "x".repeat(10 << 20);
  const bodies = [
    "", "{", "{\"prompt\": ", "{\"prompt\": \"a\"", "[]", "null", "42", "\"prompt\"",
    '{"prompt": "a", "max_tokens": -5}', '{"prompt": "a", "max_tokens": 0}',
    '{"prompt": "a", "max_tokens": 1e300}', '{"prompt": "a", "max_tokens": 99999999999999999999}',
    '{"prompt": "a", "temperature": 1e308}', '{"prompt": "a", "temperature": -1}',
    '{"prompt": "a", "top_k": "many"}', '{"prompt": "a", "top_p": [1]}',
    '{"prompt": "a", "seed": -1}', '{"prompt": "a", "stop": [1, 2]}',
    '{"prompt": "a", "stop": {"a": 1}}', '{"prompt": "a", "stream": "yes"}',
    '{"prompt": "a", "logprobs": 100}', '{"prompt": "a", "n": 17}', '{"prompt": null}',
    '{"prompt": {"text": "a"}}', `{"prompt": "${big}"}`,
    '{"prompt": "a", "frequency_penalty": 9}',
    '{"messages": "hi"}', '{"messages": [{"role": "user"}]}',
    '{"messages": [{"role": 7, "content": "x"}]}',
  ];
  const invalidUtf8 = Buffer.concat([Buffer.from('{"prompt": "'), Buffer.from([0xff, 0xfe, 0xc3]),
                                     Buffer.from('"}')]);
  const requests = bodies.map((body, i) => [i >= 26 ? "/v1/chat/completions" : "/v1/completions",
                                            body]);
  requests.push(["/v1/completions", invalidUtf8]);
  assert.equal(requests.length, 30);
  for (const [path, body] of requests) {
    const r = await fetch(`${baseURL}${path}`, { method: "POST", body,
                                                 headers: { "Content-Type": "application/json" } });
    const label = `${path} ${String(body).slice(0, 60)}`;
    assert.ok(r.status >= 400 && r.status < 500, `${label}: HTTP ${r.status}`);
    const text = await r.text();
    assert.ok(JSON.parse(text).error.message.length > 0, `${label}: ${text}`);
  }
  assert.equal(await metric("requests_processing"), 0);
  assert.ok((await completionText("The cat", 4, false)).length > 0);
});
