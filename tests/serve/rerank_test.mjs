// POST /v1/rerank on a reranker (a synthetic BERT with a classifier head, written as
// tests/engine/model/encoders/bert-rank.json says): each document's relevance_score is
// llama.cpp's score of its (query, document) pair (llama-embedding --pooling rank), the results
// sorted best first, top_n and return_documents as Jina's API, TEI's shape where the body says
// "texts"; bad fields are 400s naming them; /v1/embeddings on a reranker is a 501.
// Usage: node rerank_test.mjs BASE_URL CASE_JSON PAIRS_TXT
import assert from "node:assert/strict";
import fs from "node:fs";
import { check } from "./check.mjs";

const [baseURL, casePath, pairsPath] = process.argv.slice(2);
const want = JSON.parse(fs.readFileSync(casePath, "utf8")).embeddings.map((v) => v[0]);
const pairs = fs.readFileSync(pairsPath, "utf8").split("\n").filter((l) => l).map((l) => l.split("\t"));
const post = async (path, body) => {
  const r = await fetch(`${baseURL}${path}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
};

await check("each document's score is llama.cpp's, sorted best first", async () => {
  // pairs.txt's first two pairs share their query.
  const query = pairs[0][0];
  const documents = [pairs[0][1], pairs[1][1]];
  const r = await post("/v1/rerank", { model: "m", query, documents });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.object, "list");
  assert.equal(r.body.results.length, 2);
  for (const result of r.body.results) {
    assert.ok(Math.abs(result.relevance_score - want[result.index]) < 1e-5,
              `document ${result.index}: ${result.relevance_score} vs llama.cpp's ${want[result.index]}`);
  }
  const scores = r.body.results.map((x) => x.relevance_score);
  assert.deepEqual(scores, [...scores].sort((a, b) => b - a));
  assert.ok(r.body.usage.prompt_tokens > 0);
});

await check("top_n, return_documents, Jina's {text} documents and TEI's shape", async () => {
  const query = pairs[0][0];
  const documents = [pairs[0][1], { text: pairs[1][1] }, "an unrelated third text"];
  const top = await post("/rerank", { query, documents, top_n: 1, return_documents: true });
  assert.equal(top.status, 200, JSON.stringify(top.body));
  assert.equal(top.body.results.length, 1);
  const best = top.body.results[0];
  assert.equal(best.document.text, best.index === 1 ? pairs[1][1] : documents[best.index]);
  const tei = await post("/v1/rerank", { query, texts: [pairs[0][1], pairs[1][1]], return_text: true });
  assert.equal(tei.status, 200, JSON.stringify(tei.body));
  assert.ok(Array.isArray(tei.body));
  for (const r of tei.body) {
    assert.ok(Math.abs(r.score - want[r.index]) < 1e-5);
    assert.equal(r.text, pairs[r.index][1]);
  }
});

await check("bad fields are 400s naming them; embeddings 501", async () => {
  const bad = async (body, param) => {
    const r = await post("/v1/rerank", body);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.param, param);
  };
  await bad({ documents: ["a"] }, "query");
  await bad({ query: "q", documents: [] }, "documents");
  await bad({ query: "q", documents: ["a", 7] }, "documents[1]");
  await bad({ query: "q", documents: ["a"], top_n: 0 }, "top_n");
  await bad({ query: "q", documents: ["a ".repeat(500)] }, "documents[0]");
  const e = await post("/v1/embeddings", { input: "x" });
  assert.equal(e.status, 501);
});
