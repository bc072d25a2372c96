// Tool calls through the official openai client, on a model whose template teaches one of the
// forms: Hermes's <tool_call> (tests/serve/hermes_tools.jinja), or the real templates of Mistral
// Nemo ([TOOL_CALLS] list; ids of nine letters and digits), gpt-oss (harmony channels),
// Qwen3-Coder and MiniMax M2 (XML; MiniMax's prompt opens a <think> block), Kimi K2 and
// Functionary v3.2 (messages to recipients): a required call and a named one (grammars, so that
// even this small model writes a valid call; 600 tokens bound the longest a call's grammar
// allows, whitespace included, at a character a token), streamed and not; the round trip (the
// call, the tool's result, an answer); an answer that mixes text and a call; tool_choice "none";
// and the 400s.
// Usage: node tools_test.mjs BASE_URL [FORM]   (FORM: hermes, mistral_list, harmony,
// qwen3_coder, minimax_m2, kimi_k2 or functionary_v32; a server on that template already at
// BASE_URL)
import assert from "node:assert/strict";
import OpenAI from "openai";
import { check } from "./check.mjs";

const [baseURL, form = "hermes"] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: "unused", maxRetries: 0 });
const model = "tools.gguf";
const tools = [
  { type: "function", function: { name: "get_weather", description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 } },
                  required: ["city"] } } },
  { type: "function", function: { name: "get_time", description: "The time in a zone", parameters: {
    type: "object", properties: { zone: { type: "string", maxLength: 8 } }, required: ["zone"] } } },
];
const question = [{ role: "user", content: "What is the weather in Paris?" }];
// MiniMax M2's prompt opens a <think> block, which a required call's grammar closes first.
const thinks = form === "minimax_m2";

function checkCall(call, names) {
  assert.equal(call.type, "function");
  assert.ok(call.id.length > 0);
  assert.ok(names.includes(call.function.name), call.function.name);
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === "get_weather") assert.equal(typeof args.city, "string");
  if (call.function.name === "get_time") assert.equal(typeof args.zone, "string");
  return args;
}

await check("tool_choice required: a valid call, finish_reason tool_calls", async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model, messages: question, tools, tool_choice: "required", seed, max_tokens: 600 });
    const c = r.choices[0];
    assert.equal(c.finish_reason, "tool_calls");
    assert.equal(c.message.content, null);
    assert.equal(c.message.tool_calls.length, 1);
    checkCall(c.message.tool_calls[0], ["get_weather", "get_time"]);
  }
});

await check("a named function, streamed: delta.tool_calls", async () => {
  const calls = [];
  let finish = null, content = "";
  for await (const chunk of await client.chat.completions.create({
      model, messages: question, tools, seed: 4, max_tokens: 600, stream: true,
      tool_choice: { type: "function", function: { name: "get_weather" } } })) {
    const choice = chunk.choices[0];
    finish = choice.finish_reason ?? finish;
    content += choice.delta.content ?? "";
    for (const d of choice.delta.tool_calls ?? []) {
      calls[d.index] ??= { id: d.id, type: d.type, function: { name: "", arguments: "" } };
      calls[d.index].function.name += d.function?.name ?? "";
      calls[d.index].function.arguments += d.function?.arguments ?? "";
    }
  }
  assert.equal(finish, "tool_calls");
  assert.equal(content.trim(), "");
  assert.equal(calls.length, 1);
  checkCall(calls[0], ["get_weather"]);
});

await check("a round trip: the call, the tool's result, then an answer", async () => {
  const first = await client.chat.completions.create({
    model, messages: question, tools, tool_choice: "required", seed: 5, max_tokens: 600 });
  const call = first.choices[0].message.tool_calls[0];
  const messages = [...question, first.choices[0].message,
                    { role: "tool", tool_call_id: call.id, content: "18 C and sunny" }];
  const answer = await client.chat.completions.create({
    model, messages, tools, tool_choice: "none", max_tokens: 8, temperature: 0 });
  assert.equal(typeof answer.choices[0].message.content, "string");
  assert.equal(answer.choices[0].message.tool_calls, undefined);
  assert.notEqual(answer.choices[0].finish_reason, "tool_calls");
});

// The text forced by a grammar: auto parses what the model wrote, none leaves it as text.
const mixed = {
  hermes: 'Let me check. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
  mistral_list: 'Let me check. [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}}]',
  harmony: '<|channel|>commentary<|message|>Let me check. <|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}',
  qwen3_coder: 'Let me check. <tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>',
  minimax_m2: 'Let me check. <minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Oslo</parameter>\n</invoke>\n</minimax:tool_call>',
  kimi_k2: 'Let me check. <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Oslo"}<|tool_call_end|><|tool_calls_section_end|>',
  // The prompt wrote the first ">>>": the answer begins with its recipient.
  functionary_v32: 'all\nLet me check. >>>get_weather\n{"city": "Oslo"}',
}[form];
// With tool_choice none the call stays as written: for harmony, the preamble's channel is still
// read, and the call's message comes as written after it.
// Functionary's recipients are read from every answer too: the text to "all" is the content.
const asText = form === "harmony"
  ? 'Let me check. <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}'
  : form === "functionary_v32" ? mixed.slice(4) : mixed;
// After a thought where the prompt opened one: the thought is reasoning, the rest as before.
const forced = { grammar: `root ::= ${JSON.stringify((thinks ? "A thought.</think>\n\n" : "") + mixed)}` };
await check("tool_choice auto: text and a call apart; none: all text", async () => {
  const auto = await client.chat.completions.create({
    model, messages: question, tools, max_tokens: 200, ...forced });
  assert.equal(auto.choices[0].message.content, "Let me check. ");
  assert.equal(auto.choices[0].message.tool_calls.length, 1);
  assert.deepEqual(checkCall(auto.choices[0].message.tool_calls[0], ["get_weather"]), { city: "Oslo" });
  const none = await client.chat.completions.create({
    model, messages: question, tools, tool_choice: "none", max_tokens: 200, ...forced });
  assert.equal(none.choices[0].message.content, asText);
  assert.equal(none.choices[0].message.tool_calls, undefined);
});

await check("bad tools and tool_choice are 400s naming the field", async () => {
  const bad = async (extra, param) => {
    await assert.rejects(client.chat.completions.create({ model, messages: question, ...extra }),
                         (e) => e.status === 400 && e.error?.param === param);
  };
  await bad({ tools, tool_choice: { type: "function", function: { name: "nope" } } }, "tool_choice");
  await bad({ tool_choice: "required" }, "tool_choice");
  await bad({ tools, tool_choice: "sometimes" }, "tool_choice");
  await bad({ tools: [{ type: "function" }] }, "tools[0]");
  await bad({ tools, tool_choice: "required", response_format: { type: "json_object" } },
            "tool_choice");
  // The XML forms leave out an optional parameter whose schema cannot be held to, instead.
  if (form !== "qwen3_coder" && form !== "minimax_m2") {
    await bad({ tools: [{ type: "function", function: { name: "f", description: "f", parameters: {
                type: "object", properties: { s: { type: "string", pattern: "(?=x)" } } } } }],
                tool_choice: "required" }, "tool_choice");
  }
});
