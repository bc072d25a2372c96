// The chat page at / in headless Chromium (Debian's, driven by puppeteer-core): a conversation of
// two turns, typed and sent as a person would, must show the answers the API gives for the same
// messages (greedy, so they are fixed); text is shown as text, not HTML; Stop ends an answer and
// the page goes on working.
// Usage: node webui_test.mjs BASE_URL   (a server already at BASE_URL)
import assert from "node:assert/strict";
import puppeteer from "puppeteer-core";
import { check } from "./check.mjs";

const [baseURL] = process.argv.slice(2);
const chromium = process.env.CHROMIUM ?? "/usr/bin/chromium";

// The API's own answer to `messages`, greedy.
async function apiAnswer(messages, max_tokens) {
  const r = await fetch(`${baseURL}/v1/chat/completions`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ messages, temperature: 0, max_tokens }) });
  assert.equal(r.status, 200);
  return (await r.json()).choices[0].message.content;
}

const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
try {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.goto(`${baseURL}/`, { waitUntil: "load" });

  const setField = (id, value) => page.$eval(`#${id}`, (el, v) => {
    el.value = v;
    el.dispatchEvent(new Event("change"));
  }, String(value));
  // Types a message, sends it with Enter, and waits for the answer to end.
  const say = async (text) => {
    await page.type("#input", text);
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.body.dataset.busy === "1", { timeout: 10000 })
      .catch(() => {});  // a short answer may be over before the first poll
    await page.waitForFunction(() => document.body.dataset.busy === "0", { timeout: 60000 });
    return page.$$eval(".message.assistant .content", (els) => els.at(-1).textContent);
  };

  await check("the page names the model", async () => {
    await page.waitForFunction(() => document.getElementById("model").textContent !== "");
    const models = await (await fetch(`${baseURL}/v1/models`)).json();
    assert.equal(await page.$eval("#model", (el) => el.textContent), models.data[0].id);
  });

  await check("two turns typed in the page answer as the API does", async () => {
    await setField("temperature", 0);
    await setField("max_tokens", 16);
    const first = await say("Hello there");
    assert.ok(first.length > 0);
    assert.equal(first, await apiAnswer([{ role: "user", content: "Hello there" }], 16));
    const second = await say("And then?");
    assert.equal(second, await apiAnswer([
      { role: "user", content: "Hello there" }, { role: "assistant", content: first },
      { role: "user", content: "And then?" }], 16));
    assert.equal(await page.$$eval(".message.user", (els) => els.length), 2);
  });

  await check("a message is shown as text, not as HTML", async () => {
    await say("<b id=injected>bold</b>");
    assert.equal(await page.$("#injected"), null);
    const shown = await page.$$eval(".message.user .content", (els) => els.at(-1).textContent);
    assert.equal(shown, "<b id=injected>bold</b>");
  });

  await check("Stop ends a long answer, and the next one comes", async () => {
    await page.click("#clear");
    await setField("max_tokens", 2000);
    await page.type("#input", "Tell me a long story");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.body.dataset.busy === "1");
    await page.click("#stop");
    await page.waitForFunction(() => document.body.dataset.busy === "0", { timeout: 10000 });
    await setField("max_tokens", 8);
    assert.equal(await say("Hi"), await apiAnswer([
      { role: "user", content: "Tell me a long story" },
      { role: "assistant", content: await page.$$eval(".message.assistant .content",
                                                      (els) => els[0].textContent) },
      { role: "user", content: "Hi" }], 8));
  });

  await check("no script errors", async () => assert.deepEqual(pageErrors, []));
} finally {
  await browser.close();
}
