// The chat page at / in headless Chromium (Debian's, driven by puppeteer-core): a conversation of
// two turns, typed and sent as a person would, must keep the answers the API gives for the same
// messages (greedy, so they are fixed) and show the server's token count and speed for each;
// conversations are listed, survive a reload, switch and delete; answers are drawn as Markdown
// without letting any of their text become markup; Stop ends an answer and the page goes on
// working; unreadable storage does not break it; and a screenshot of it is not blank.
// Usage: node webui_test.mjs BASE_URL [SCREENSHOT.png]   (a server already at BASE_URL)
import assert from "node:assert/strict";
import puppeteer from "puppeteer-core";
import { check } from "./check.mjs";

const [baseURL, screenshotPath] = process.argv.slice(2);
const chromium = process.env.CHROMIUM ?? "/usr/bin/chromium";

// The API's own answer to `messages`, greedy: its text and its completion token count.
async function apiAnswer(messages, max_tokens) {
  const r = await fetch(`${baseURL}/v1/chat/completions`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ messages, temperature: 0, max_tokens }) });
  assert.equal(r.status, 200);
  const body = await r.json();
  return { text: body.choices[0].message.content, tokens: body.usage.completion_tokens };
}

const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 700 });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.goto(`${baseURL}/`, { waitUntil: "load" });

  const setField = (id, value) => page.$eval(`#${id}`, (el, v) => {
    el.value = v;
    el.dispatchEvent(new Event("change"));
  }, String(value));
  // The conversations as the page stored them.
  const stored = () => page.evaluate(() => JSON.parse(localStorage.getItem("loom.conversations")));
  const shownTitles = () => page.$$eval("#conversations .title", (els) => els.map((e) => e.textContent));
  // Types a message, sends it with Enter, and waits for the answer to end; returns its stored
  // text (what was streamed, before Markdown) and the figures shown under it.
  const say = async (text) => {
    await page.type("#input", text);
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.body.dataset.busy === "1", { timeout: 10000 })
      .catch(() => {});  // a short answer may be over before the first poll
    await page.waitForFunction(() => document.body.dataset.busy === "0", { timeout: 60000 });
    const messages = (await stored())[0].messages;
    assert.equal(messages.at(-2).content, text);
    const stats = await page.$$eval(".message.assistant .stats", (els) => els.at(-1).textContent);
    return { text: messages.at(-1).content, stats };
  };
  const reload = async () => {
    await page.reload({ waitUntil: "load" });
    await page.waitForFunction(() => document.getElementById("model").textContent !== "");
  };

  await check("the page names the model", async () => {
    await page.waitForFunction(() => document.getElementById("model").textContent !== "");
    const models = await (await fetch(`${baseURL}/v1/models`)).json();
    assert.equal(await page.$eval("#model", (el) => el.textContent), models.data[0].id);
  });

  let firstTurns;  // the conversation of the next check: [user, assistant, user, assistant]
  await check("two turns typed in the page answer as the API does, with their figures", async () => {
    await setField("temperature", 0);
    await setField("max_tokens", 16);
    const first = await say("Hello there");
    const expected = await apiAnswer([{ role: "user", content: "Hello there" }], 16);
    assert.ok(first.text.length > 0);
    assert.equal(first.text, expected.text);
    // The server's timings: as many tokens as the API counts, at a speed.
    const figures = /^(\d+) tokens, (\d+\.\d) t\/s; prompt (\d+) tokens, (\d+\.\d) t\/s$/
      .exec(first.stats);
    assert.ok(figures, `figures shown: "${first.stats}"`);
    assert.equal(Number(figures[1]), expected.tokens);
    assert.ok(Number(figures[2]) > 0 && Number(figures[3]) > 0);
    const second = await say("And then?");
    assert.equal(second.text, (await apiAnswer([
      { role: "user", content: "Hello there" }, { role: "assistant", content: first.text },
      { role: "user", content: "And then?" }], 16)).text);
    assert.equal(await page.$$eval(".message.user", (els) => els.length), 2);
    firstTurns = ["Hello there", first.text, "And then?", second.text];
  });

  await check("the conversation is listed and survives a reload", async () => {
    assert.deepEqual(await shownTitles(), ["Hello there"]);
    await reload();
    assert.deepEqual(await shownTitles(), ["Hello there"]);
    assert.equal(await page.$$eval(".message", (els) => els.length), 0);  // a new chat is shown
    await page.click("#conversations li .title");
    assert.deepEqual((await stored())[0].messages.map((m) => m.content), firstTurns);
    const users = await page.$$eval(".message.user .content", (els) => els.map((e) => e.textContent));
    assert.deepEqual(users, [firstTurns[0], firstTurns[2]]);
    assert.equal(await page.$$eval(".message.assistant", (els) => els.length), 2);
    assert.match(await page.$eval(".message.assistant .stats", (el) => el.textContent), /\d+ tokens/);
  });

  await check("a new chat is listed first; conversations switch and delete", async () => {
    await page.click("#clear");
    assert.equal(await page.$$eval(".message", (els) => els.length), 0);
    await say("Second chat");
    assert.deepEqual(await shownTitles(), ["Second chat", "Hello there"]);
    await page.click("#conversations li:nth-child(2) .title");
    assert.equal(await page.$$eval(".message", (els) => els.length), 4);
    // Continuing the older one moves it to the top.
    await say("More");
    assert.deepEqual(await shownTitles(), ["Hello there", "Second chat"]);
    await page.click("#conversations li:nth-child(2) .delete");
    assert.deepEqual(await shownTitles(), ["Hello there"]);
    assert.deepEqual((await stored()).map((c) => c.title), ["Hello there"]);
    assert.equal(await page.$$eval(".message", (els) => els.length), 6);  // still shown
  });

  await check("a message is shown as text, not as HTML", async () => {
    await say("<b id=injected>bold</b>");
    assert.equal(await page.$("#injected"), null);
    const shown = await page.$$eval(".message.user .content", (els) => els.at(-1).textContent);
    assert.equal(shown, "<b id=injected>bold</b>");
  });

  await check("answers are drawn as Markdown, and none of their text becomes markup", async () => {
    const code = 'const a = "<img src=x onerror=alert(1)>";\n  return a < b && c > d;';
    const answer = [
      "## Title with `code`", "", "Some **bold**, *italic* and a [link](https://example.org/x).",
      "A [trap](javascript:alert(1)) and <script id=injected2>alert(2)</script> as text.", "",
      "- one", "- two <img id=injected3 src=x>", "", "1. first", "2. second", "",
      "> quoted", "", "```js", code, "```", "after"].join("\n");
    await page.evaluate((answer) => {
      const conversations = JSON.parse(localStorage.getItem("loom.conversations"));
      conversations.unshift({ id: "markdown", title: "Markdown", updated: 0, messages: [
        { role: "user", content: "Show me" }, { role: "assistant", content: answer }] });
      localStorage.setItem("loom.conversations", JSON.stringify(conversations));
    }, answer);
    await reload();
    await page.click("#conversations li:first-child .title");
    const drawn = await page.$eval(".message.assistant .content", (el) => ({
      h2: el.querySelector("h2")?.textContent,
      h2code: el.querySelector("h2 code")?.textContent,
      strong: el.querySelector("p strong")?.textContent,
      em: el.querySelector("p em")?.textContent,
      links: [...el.querySelectorAll("a")].map((a) => [a.textContent, a.getAttribute("href")]),
      ul: [...el.querySelectorAll("ul li")].map((li) => li.textContent),
      ol: [...el.querySelectorAll("ol li")].map((li) => li.textContent),
      quote: el.querySelector("blockquote")?.textContent,
      code: el.querySelector("pre code")?.textContent,
      language: el.querySelector("pre code")?.className,
      last: el.lastElementChild.textContent,
      elements: [...el.querySelectorAll("*")].map((e) => e.tagName.toLowerCase()),
    }));
    assert.equal(drawn.h2, "Title with code");
    assert.equal(drawn.h2code, "code");
    assert.equal(drawn.strong, "bold");
    assert.equal(drawn.em, "italic");
    assert.deepEqual(drawn.links, [["link", "https://example.org/x"]]);
    assert.deepEqual(drawn.ul, ["one", "two <img id=injected3 src=x>"]);
    assert.deepEqual(drawn.ol, ["first", "second"]);
    assert.equal(drawn.quote, "quoted");
    assert.equal(drawn.code, code);
    assert.equal(drawn.language, "language-js");
    assert.equal(drawn.last, "after");
    for (const tag of drawn.elements) {
      assert.ok(["h2", "code", "p", "strong", "em", "a", "ul", "ol", "li", "blockquote", "pre",
                 "button"].includes(tag), `unexpected element <${tag}>`);
    }
    assert.equal(await page.$("#injected2, #injected3"), null);
  });

  await check("Stop ends a long answer, and the next one comes", async () => {
    await page.click("#clear");
    await setField("max_tokens", 2000);
    // The answer reaches the page slowly (this model writes a slot's whole context in a fifth of
    // a second), so that Stop comes while it streams and what was shown leaves room in the slot
    // for the next turn.
    await page.emulateNetworkConditions({ download: 2000, upload: 1e6, latency: 0 });
    await page.type("#input", "Tell me a long story");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.body.dataset.busy === "1");
    await page.waitForFunction(() =>
      document.querySelector(".message.assistant:last-child .content").textContent !== "");
    await page.click("#stop");
    await page.waitForFunction(() => document.body.dataset.busy === "0", { timeout: 10000 });
    await page.emulateNetworkConditions(null);
    const stopped = (await stored())[0].messages[1].content;
    assert.ok(stopped.length > 0 && stopped.length < 1000, stopped);
    await setField("max_tokens", 8);
    assert.equal((await say("Hi")).text, (await apiAnswer([
      { role: "user", content: "Tell me a long story" },
      { role: "assistant", content: stopped },
      { role: "user", content: "Hi" }], 8)).text);
  });

  await check("a screenshot of the page is not blank", async () => {
    const png = await page.screenshot({ type: "png", ...(screenshotPath ? { path: screenshotPath } : {}) });
    // Decoded by the browser itself: the share of the commonest colour, and how many there are.
    const pixels = await page.evaluate(async (base64) => {
      const image = new Image();
      image.src = "data:image/png;base64," + base64;
      await image.decode();
      const canvas = document.createElement("canvas");
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext("2d");
      context.drawImage(image, 0, 0);
      const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
      const counts = new Map();
      for (let i = 0; i < data.length; i += 4) {
        const colour = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
        counts.set(colour, (counts.get(colour) ?? 0) + 1);
      }
      return { width: image.width, colours: counts.size,
               commonest: Math.max(...counts.values()) / (data.length / 4) };
    }, Buffer.from(png).toString("base64"));
    assert.equal(pixels.width, 1000);
    assert.ok(pixels.colours >= 16, `${pixels.colours} colours`);
    assert.ok(pixels.commonest < 0.95, `one colour covers ${pixels.commonest}`);
  });

  await check("unreadable storage starts an empty list, and the page still works", async () => {
    await page.evaluate(() => localStorage.setItem("loom.conversations", "{not json"));
    await reload();
    assert.deepEqual(await shownTitles(), []);
    const answer = await say("Hello there");
    assert.equal(answer.text, (await apiAnswer([{ role: "user", content: "Hello there" }], 8)).text);
  });

  await check("no script errors", async () => assert.deepEqual(pageErrors, []));
} finally {
  await browser.close();
}
