// The chat page at /: one self-contained HTML file (no external assets: the server may have no network). It
// keeps the conversation in the page, streams replies over the same /v1/chat/completions API clients use and
// shows reasoning_content apart from the answer.
#include "server/http_server.hpp"

namespace tg::llm::server {

const std::string& chat_page_html() {
  static const std::string page = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tg-llm</title>
<style>
  body { font: 18px/1.5 system-ui, sans-serif; margin: 0; background: #fff; color: #111; display: flex; flex-direction: column; height: 100vh; }
  header { padding: 8px 16px; border-bottom: 1px solid #ddd; display: flex; gap: 12px; align-items: center; }
  header h1 { font-size: 18px; margin: 0; }
  #status { color: #666; font-size: 14px; flex: 1; }
  #log { flex: 1; overflow-y: auto; padding: 16px; }
  .msg { max-width: 48em; margin: 0 0 14px; padding: 10px 14px; border-radius: 8px; white-space: pre-wrap; }
  .user { background: #e8f0fe; margin-left: auto; }
  .assistant { background: #f3f3f3; }
  .error { background: #fde8e8; color: #900; }
  details.reasoning { color: #555; font-size: 15px; margin-bottom: 6px; }
  form { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid #ddd; }
  textarea { flex: 1; font: inherit; padding: 8px; resize: vertical; min-height: 2.5em; }
  button { font: inherit; padding: 0 18px; }
  input { font: inherit; font-size: 14px; }
</style>
</head>
<body>
<header><h1>tg-llm</h1><span id="status">connecting…</span>
  <input id="key" type="password" placeholder="API key (if the server needs one)" size="28">
  <button id="reset" type="button">New chat</button></header>
<div id="log"></div>
<form id="form"><textarea id="input" placeholder="Message (Enter sends, Shift+Enter: new line)" autofocus></textarea>
  <button id="send" type="submit">Send</button></form>
<script>
"use strict";
const log = document.getElementById("log"), input = document.getElementById("input"), send = document.getElementById("send");
const statusLine = document.getElementById("status"), key = document.getElementById("key");
key.value = localStorage.getItem("tg-llm-key") || "";
key.onchange = () => localStorage.setItem("tg-llm-key", key.value);
let messages = [], busy = null, model = "";

async function health() {
  try {
    const h = await (await fetch("/health")).json();
    if (h.status === "ready") {
      const r = await fetch("/v1/models", { headers: auth() });
      if (r.ok) model = (await r.json()).data[0].id;
      statusLine.textContent = "ready" + (model ? ": " + model : "");
      return;
    }
    statusLine.textContent = h.status;
  } catch (e) { statusLine.textContent = "server unreachable"; }
  setTimeout(health, 1000);
}
function auth() { return key.value ? { "Authorization": "Bearer " + key.value } : {}; }
function bubble(cls, text) {
  const d = document.createElement("div");
  d.className = "msg " + cls;
  d.textContent = text;
  log.appendChild(d);
  log.scrollTop = log.scrollHeight;
  return d;
}

async function ask(text) {
  messages.push({ role: "user", content: text });
  bubble("user", text);
  const box = bubble("assistant", "");
  box.dataset.done = "false";
  let reasoning = null, answer = document.createElement("span"), content = "", thought = "";
  box.appendChild(answer);
  busy = new AbortController();
  send.textContent = "Stop";
  try {
    const r = await fetch("/v1/chat/completions", {
      method: "POST", signal: busy.signal, headers: { "Content-Type": "application/json", ...auth() },
      body: JSON.stringify({ model: model || undefined, messages, stream: true }) });
    if (!r.ok) throw new Error((await r.json()).error.message);
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let at;
      while ((at = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, at); buf = buf.slice(at + 2);
        if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
        const chunk = JSON.parse(event.slice(6));
        if (chunk.error) throw new Error(chunk.error.message);
        const delta = (chunk.choices[0] || {}).delta || {};
        if (delta.reasoning_content) {
          if (!reasoning) {
            reasoning = document.createElement("details");
            reasoning.className = "reasoning";
            reasoning.innerHTML = "<summary>Thinking</summary><div></div>";
            box.insertBefore(reasoning, answer);
          }
          thought += delta.reasoning_content;
          reasoning.lastChild.textContent = thought;
        }
        if (delta.content) { content += delta.content; answer.textContent = content; }
        if (delta.tool_calls) for (const c of delta.tool_calls) answer.textContent = (content += "[tool call " + c.function.name + " " + c.function.arguments + "]");
        log.scrollTop = log.scrollHeight;
      }
    }
    messages.push({ role: "assistant", content });
  } catch (e) {
    if (e.name !== "AbortError") { box.className = "msg error"; box.textContent = e.message; messages.pop(); }
    else messages.push({ role: "assistant", content });
  } finally {
    box.dataset.done = "true";
    busy = null;
    send.textContent = "Send";
  }
}

document.getElementById("form").onsubmit = (ev) => {
  ev.preventDefault();
  if (busy) { busy.abort(); return; }
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  ask(text);
};
input.onkeydown = (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); document.getElementById("form").requestSubmit(); }
};
document.getElementById("reset").onclick = () => { if (!busy) { messages = []; log.textContent = ""; } };
health();
</script>
</body>
</html>
)HTML";
  return page;
}

}  // namespace tg::llm::server
