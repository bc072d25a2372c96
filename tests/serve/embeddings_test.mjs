// POST /v1/embeddings on an embedding model (llama.cpp's bert fixture) through the official
// openai client: one text gives llama.cpp's mean-pooled embedding normalised, a list gives each
// text what it gets alone (in order), token ids what their text gives, base64 (the client's
// default) and float alike; the usage counts the tokens; bad fields are 400s naming them, and
// text generation and reranking are 501s.
// Usage: node embeddings_test.mjs BASE_URL CASE_JSON   (a server of the fixture at BASE_URL)
import assert from "node:assert/strict";
import fs from "node:fs";
import OpenAI from "openai";
import { check } from "./check.mjs";

const [baseURL, casePath] = process.argv.slice(2);
const fixture = JSON.parse(fs.readFileSync(casePath, "utf8"));
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: "unused", maxRetries: 0 });
const model = "model.gguf";

const close = (a, b, tol = 1e-6) => {
  assert.equal(a.length, b.length);
  a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) <= tol, `[${i}] ${x} vs ${b[i]}`));
};
const norm = (v) => Math.hypot(...v);

await check("one text: llama.cpp's pooled embedding, normalised", async () => {
  const r = await client.embeddings.create({ model, input: fixture.prompt_text });
  assert.equal(r.object, "list");
  assert.equal(r.data.length, 1);
  assert.equal(r.data[0].index, 0);
  assert.equal(r.usage.prompt_tokens, fixture.tokens.length);
  const want = fixture.pooled.map((x) => x / norm(fixture.pooled));
  close(r.data[0].embedding, want, 1e-5);
});

await check("a list: each text as alone, in order; float and base64 alike; token ids", async () => {
  const texts = ["the cat sat", fixture.prompt_text, "a red barn over the tree"];
  const all = await client.embeddings.create({ model, input: texts, encoding_format: "float" });
  assert.deepEqual(all.data.map((d) => d.index), [0, 1, 2]);
  for (let i = 0; i < texts.length; ++i) {
    const alone = await client.embeddings.create({ model, input: texts[i] });  // base64
    close(all.data[i].embedding, alone.data[0].embedding);
  }
  const ids = await client.embeddings.create({ model, input: fixture.tokens, encoding_format: "float" });
  close(ids.data[0].embedding, all.data[1].embedding);
});

await check("bad fields are 400s naming them; generation and reranking 501s", async () => {
  const bad = async (body, param) => {
    await assert.rejects(client.embeddings.create({ model, ...body }),
                         (e) => e.status === 400 && e.error?.param === param);
  };
  await bad({ input: [] }, "input");
  await bad({ input: [1, -5] }, "input");
  await bad({ input: ["ok", 3] }, "input[1]");
  await bad({ input: "x", encoding_format: "int8" }, "encoding_format");
  await bad({ input: "x", dimensions: 7 }, "dimensions");
  await assert.rejects(client.chat.completions.create({
    model, messages: [{ role: "user", content: "hi" }] }), (e) => e.status === 501);
  const rerank = await fetch(`${baseURL}/v1/rerank`, { method: "POST", body: "{}" });
  assert.equal(rerank.status, 501);  // a model without a classifier head
});
